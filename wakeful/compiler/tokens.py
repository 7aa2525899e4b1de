"""Token counting behind a protocol, memoised by content.

The compiler never imports a tokenizer: it is handed a :class:`TokenCounter`. The
:class:`EstimatingCounter` here is pure and fast (bytes / 4, rounded up); a real BPE counter
lives in :mod:`wakeful.tokenizers` because it loads vocabulary files.

Counting is the expensive part of a compile (a BPE pass per block), so counts
are memoised in a :class:`CountingCache` that the caller owns and may reuse across compiles.
The cache is keyed by the text itself: dict lookup on a ``str`` is equality on the content (no
collision risk, unlike a truncated digest), and CPython caches a string's hash on the object,
so a warm lookup costs one probe. Nothing in the output depends on the cache: a cold and a
warm compile produce the same bytes. There is no module-level cache on purpose.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens of a text. ``name`` identifies the tokenizer in ledgers and caches."""

    @property
    def name(self) -> str: ...

    def count(self, text: str) -> int: ...


@dataclass(frozen=True, slots=True)
class EstimatingCounter:
    """``ceil(utf8_bytes / bytes_per_token)``: a pure, deliberately pessimistic estimate.

    English prose averages ~4.2 bytes per token on cl100k/o200k, code ~3.5; the compiler
    keeps a headroom allocation to absorb the difference. Framing overhead per block is the
    compiler's business (see ``facts.py``), not the counter's.
    """

    bytes_per_token: int = 4

    @property
    def name(self) -> str:
        return f"estimate/{self.bytes_per_token}"

    def count(self, text: str) -> int:
        # str.isascii() is O(1) in CPython; ASCII length equals UTF-8 length.
        size = len(text) if text.isascii() else len(text.encode("utf-8"))
        return -(-size // self.bytes_per_token)


@dataclass(slots=True)
class WorkCounts:
    """What compiles with one cache have done, counted where it is done: facts made (a
    block summarised, ``facts.make_facts``), blocks derived (a cleared or settled copy of a
    block, ``lookup.FactsTable.derived``) and partition entries touched (a block taken out
    of or put into its groups and redone, ``state.Partition.touch``). Counts never change
    the output; they let a test see that an incremental compile did work in proportion to
    what changed rather than to the history.
    """

    facts_made: int = 0
    blocks_derived: int = 0
    entries_touched: int = 0
    # History entries the clearing pass read to find the tool results it clears
    # (``clearing.cleared_results``); none while the boundary stays where it was.
    results_scanned: int = 0
    # History entries the clearing pass built (its view of the history: kept entries are
    # not built again) or read back through to find the newest wake.
    history_built: int = 0
    # Facts read to find the few blocks some passes look for (``positions.Positions``):
    # the edited stretch of a snapshot edited in one place, else the whole snapshot.
    positions_read: int = 0
    # Facts put one by one into the list the partition sees (``pipeline.derive``): every
    # cleared and settled result on the general path, only the edited stretch and the
    # results whose treatment changed when it is spliced from the last list (``splice.py``).
    results_placed: int = 0

    def snapshot(self) -> tuple[int, int, int]:
        return (self.facts_made, self.blocks_derived, self.entries_touched)


class CountingCache:
    """Memoised token counts (by content) and the compiler's incremental state.

    Besides counts, the cache holds per namespace (counter, ranking policy) the facts of
    every block seen (keyed by block id, reused only for a block equal by value) and each
    agent's partition of its last snapshot (see ``partition.py``). A worker that keeps one
    cache for its lifetime compiles the next call of an agent from the difference between
    snapshots. Nothing in the output depends on the cache. Counts and facts are bounded by
    ``max_entries``; on overflow they are cleared, which only costs speed. One compile at a
    time per agent: compiles of different agents may share the cache from several threads
    (each agent's state is its own; the shared tables are dicts changed one operation at a
    time, where a lost race costs only work done again). ``work`` counts are then
    approximate.
    """

    __slots__ = ("_counts", "_state", "counted", "max_entries", "work")

    def __init__(self, max_entries: int = 1_000_000) -> None:
        self.max_entries = max_entries
        self._counts: dict[str, dict[str, int]] = {}
        self._state: dict[tuple[Any, ...], Any] = {}
        self.counted = 0
        self.work = WorkCounts()

    def counts_for(self, counter: TokenCounter) -> dict[str, int]:
        """The text -> tokens map of one counter (internal fast path)."""
        table = self._counts.get(counter.name)
        if table is None:
            table = self._counts[counter.name] = {}
        elif len(table) > self.max_entries:
            table.clear()
        return table

    def count(self, counter: TokenCounter, text: str) -> int:
        table = self.counts_for(counter)
        tokens = table.get(text)
        if tokens is None:
            tokens = table[text] = counter.count(text)
            self.counted += 1
        return tokens

    def state(self, namespace: tuple[Any, ...], make: Callable[[int], Any]) -> Any:
        """The compiler's state for one namespace, made by ``make(max_entries)`` (internal)."""
        state = self._state.get(namespace)
        if state is None:
            state = self._state[namespace] = make(self.max_entries)
        return state

    def clear(self) -> None:
        self._counts.clear()
        self._state.clear()
