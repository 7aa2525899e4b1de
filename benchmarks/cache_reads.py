"""Cache writes that no later request read: the waste a hit ratio does not show.

A token written to the cache is *read* when a later request of the same strategy (same
cache scope) reads it from the cache: that request's cache hit covers the token's position
in the same prefix. Everything else written is paid for (1.25x or 2x the input price) and
thrown away: a window whose end keeps changing, an evidence block rewritten every call, a
cache that expired in an idle gap before anyone came back.

:class:`ReadTracker` computes this exactly from the requests in the order they were sent,
with the simulator's own parsing
(:func:`~wakeful.testing.simulator.anthropic_cache.parse_request`) and prefix digests,
and the usage the simulator billed for each:

* a request's blocks get the simulator's running prefix digests and token positions;
* its cache read of ``A`` tokens ends at the block boundary at ``A``; every block up to
  there was read, and the request that last *wrote* that block's prefix digest gets the
  read (a prefix rewritten after its entry expired belongs to the rewrite, so the expired
  write stays unread);
* its cache write of ``W`` tokens covers the blocks between ``A`` and ``A + W``; this
  request becomes their last writer.

Both boundaries must fall on block boundaries of the parsed request; if they do not, the
request observed is not the one the simulator billed, and :class:`ReadTracker` says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wakeful.providers.base import Usage
from wakeful.testing.simulator.anthropic_cache import parse_request
from wakeful.testing.simulator.tokens import digest

__all__ = ["ReadTracker"]


@dataclass
class _Write:
    tokens: int
    read: bool = False


def _chain(request: dict[str, Any]) -> tuple[list[bytes], list[int], list[int]]:
    """Prefix digests, block tokens and cumulative tokens, as ``apply_cache`` builds them."""
    blocks, _ = parse_request(request)
    running = digest("model", str(request["model"]))
    chain: list[bytes] = []
    tokens: list[int] = []
    cumulative: list[int] = []
    acc = 0
    for block in blocks:
        running = digest(running, block.identity)
        acc += block.tokens
        chain.append(running)
        tokens.append(block.tokens)
        cumulative.append(acc)
    return chain, tokens, cumulative


@dataclass
class ReadTracker:
    """Feed it every request of one cache scope, in order, with the usage billed for it."""

    _writes: list[_Write] = field(default_factory=list)
    _last_writer: dict[bytes, int] = field(default_factory=dict)
    requests: int = 0

    def observe(self, request: dict[str, Any], usage: Usage) -> None:
        chain, tokens, cumulative = _chain(request)
        read = usage.cache_read_input_tokens
        written = usage.cache_creation_input_tokens
        self.requests += 1
        if read:
            hit = _boundary(cumulative, read, "read")
            for k in range(hit + 1):
                writer = self._last_writer.get(chain[k])
                if writer is not None:
                    self._writes[writer].read = True
        if written:
            _boundary(cumulative, read + written, "write")
            for k, end in enumerate(cumulative):
                if read < end <= read + written and tokens[k]:
                    self._last_writer[chain[k]] = len(self._writes)
                    self._writes.append(_Write(tokens[k]))

    @property
    def written_tokens(self) -> int:
        return sum(w.tokens for w in self._writes)

    @property
    def never_read_tokens(self) -> int:
        return sum(w.tokens for w in self._writes if not w.read)

    @property
    def never_read_share(self) -> float:
        written = self.written_tokens
        return self.never_read_tokens / written if written else 0.0


def _boundary(cumulative: list[int], tokens: int, what: str) -> int:
    """The last block whose cumulative token count is ``tokens``."""
    for k in range(len(cumulative) - 1, -1, -1):
        if cumulative[k] == tokens:
            return k
        if cumulative[k] < tokens:
            break
    raise ValueError(
        f"a cache {what} ending at token {tokens} is not on a block boundary of the request: "
        "observe the exact request the simulator billed"
    )
