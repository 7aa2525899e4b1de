"""A window's hashes, resumed from the last window of the same agent where they can be.

Two hashes cover a whole window: its content hash (blake2b of the request JSON) and the
chain of prefix hashes (blake2b over the provider and the model, then every cache-order
element up to and including the one a breakpoint is on, each followed by a newline; see
``record.py``). Each is a pass over the window: on a small compile, as much time as all the
rest. Yet from one call to the next most of a window is the same text: the request JSON is
spliced from the elements' JSON (``encode.py``), and between two compiles of an agent its
start changes only when history leaves the window in steps.

So :class:`HashChains` keeps, per agent and hash, the blake2b state after each part of the
last window, and the next compile resumes from the longest run of leading parts equal to
the last one's. Parts are compared ``is`` first (:class:`~wakeful.compiler.encode.JsonMemo`
hands out one string per element content, so that is the common case), then ``==`` (a
memory compare, several times faster than hashing). Streaming blake2b over the same bytes
gives the same digest however the bytes are split, so nothing in the output depends on what
is kept.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from typing import Any

__all__ = ["HashChains", "hash_states"]

# What is kept in all: states (about 460 bytes each) and the characters of the parts they
# follow (held to compare the next window's parts with).
_MAX_STATES = 32_768
_MAX_CHARS = 16_000_000

_Chain = tuple[tuple[str, ...], tuple[Any, ...], int]  # parts, the state after each, chars


class HashChains:
    """Each (agent, hash)'s last chain of part states, least recently used dropped first."""

    __slots__ = ("_chains", "_chars", "_states", "max_chars", "max_states")

    def __init__(self, max_entries: int = _MAX_STATES, max_chars: int = _MAX_CHARS) -> None:
        self.max_states = min(max_entries, _MAX_STATES)
        self.max_chars = max_chars
        self._chains: OrderedDict[Hashable, _Chain] = OrderedDict()
        self._states = self._chars = 0

    def get(self, key: Hashable) -> _Chain | None:
        chain = self._chains.get(key)
        if chain is not None:
            try:
                self._chains.move_to_end(key)
            except KeyError:  # dropped meanwhile by a compile of another agent
                pass
        return chain

    def put(self, key: Hashable, chain: _Chain) -> None:
        self._drop(self._chains.pop(key, None))
        if len(chain[1]) > self.max_states or chain[2] > self.max_chars:
            return
        self._chains[key] = chain
        self._states += len(chain[1])
        self._chars += chain[2]
        while self._chains and (self._states > self.max_states or self._chars > self.max_chars):
            try:
                self._drop(self._chains.popitem(last=False)[1])
            except KeyError:  # emptied meanwhile by a compile of another agent
                break

    def _drop(self, chain: _Chain | None) -> None:
        if chain is not None:
            self._states -= len(chain[1])
            self._chars -= chain[2]


def hash_states(
    parts: Sequence[str],
    *,
    header: bytes = b"",
    separator: bytes = b"",
    chains: HashChains | None = None,
    key: Hashable = None,
) -> tuple[Any, ...]:
    """blake2b (16 bytes) over ``header``, then each part followed by ``separator``: the
    state after each part (``states[i].hexdigest()`` covers ``parts[:i + 1]``), resuming
    ``key``'s last chain in ``chains``. ``header`` must be the same for every use of a key."""
    last = chains.get(key) if chains is not None else None
    shared = 0
    states: list[Any] = []
    if last is not None:
        before, kept, _ = last
        limit = min(len(parts), len(kept))
        while shared < limit and (
            parts[shared] is before[shared] or parts[shared] == before[shared]
        ):
            shared += 1
        states = list(kept[:shared])
    h = states[-1].copy() if states else hashlib.blake2b(header, digest_size=16)
    for part in parts[shared:]:
        h.update(part.encode())
        if separator:
            h.update(separator)
        states.append(h)
        h = h.copy()
    out = tuple(states)
    if chains is not None:
        chains.put(key, (tuple(parts), out, sum(map(len, parts))))
    return out
