"""What-if variants of Wakeful's window for the cache benchmark (experiments, not defaults).

Each variant changes one thing the benchmark's diagnosis blames for cache misses, so the
report can say what fixing it would be worth (:data:`VARIANTS`):

* ``tuned_budget`` — the default policy with ``budget.context_limit`` lowered so that the
  window is about the size of the sliding window's: smaller windows, but the budget pass
  then evicts the oldest unit of history on most calls.
* ``quantized_eviction`` — raw history leaves the window in fixed quanta
  (:func:`quantized_cut`) instead of one event at a time, and the snapshot is not bounded
  by the worker's newest-200-events tail (a bound that moves by one event per call drops
  the oldest event on every call once a session passes it, shifting the start of history
  exactly like a sliding window).
* ``both_fixes`` — quantized eviction, and retrieved evidence rendered after the recent
  history instead of before it (:class:`EvidenceAfterHistoryRenderer`). Evidence changes
  at every wake; placed before the history it invalidates all of it, placed after it only
  itself and the previous wake's turns. The difference to ``quantized_eviction`` is what
  the placement alone is worth.

The renderer only reorders the request body: the ledger still lists blocks in the
compiler's placement order, so prefix-based ledger tools (``diff_ledgers``) do not apply
to its windows; the benchmark measures them through the simulator only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wakeful.compiler import AnthropicRenderer, Policy
from wakeful.compiler.blocks import Segment
from wakeful.compiler.place import Layout
from wakeful.compiler.render.base import Item

__all__ = ["VARIANTS", "EvidenceAfterHistoryRenderer", "Variant", "quantized_cut"]

# Raw history room and quantum of the quantized-eviction variants (tokens).
HISTORY_ROOM = 24_000
HISTORY_QUANTUM = 12_000
TUNED_CONTEXT_LIMIT = 48_000
UNBOUNDED_TAIL = 1_000_000


class EvidenceAfterHistoryRenderer(AnthropicRenderer):
    """Summaries, recent history, *then* evidence, then the current wake."""

    def conversation(self, layout: Layout) -> list[Item]:
        items = super().conversation(layout)
        evidence = [i for i in items if i.segment is Segment.EVIDENCE]
        if not evidence:
            return items
        rest = [i for i in items if i.segment is not Segment.EVIDENCE]
        tail = next((n for n, i in enumerate(rest) if i.segment is Segment.ASK), len(rest))
        return rest[:tail] + evidence + rest[tail:]


def quantized_cut(events: list[tuple[int, int, bool]], room: int, quantum: int) -> int:
    """The first event id to keep so history moves in ``quantum``-token steps.

    ``events`` are (id, tokens, is_turn_start) of the raw history in id order, retired ones
    included, so every event's cumulative position never changes as history grows.
    Anchors are the first turn-start at or after each multiple of ``quantum``; the cut is
    the earliest anchor whose suffix fits in ``room`` (0 when everything fits). Between
    jumps the start of history - and so the cached prefix - stays put.
    """
    total = sum(t for _, t, _ in events)
    if total <= room:
        return 0
    position, next_anchor = 0, quantum
    for ident, tokens, starts in events:
        if starts and position >= next_anchor:
            while next_anchor <= position:
                next_anchor += quantum
            if total - position <= room:
                return ident
        position += tokens
    return events[-1][0] if events else 0


@dataclass(frozen=True)
class Variant:
    name: str
    what: str
    options: dict[str, Any]


def tuned_policy() -> Policy:
    data = Policy.default().model_dump()
    data["name"] = f"default-context-{TUNED_CONTEXT_LIMIT // 1000}k"
    data["budget"]["context_limit"] = TUNED_CONTEXT_LIMIT
    return Policy.model_validate(data)


def _variants() -> tuple[Variant, ...]:
    quantized = {"recent_limit": UNBOUNDED_TAIL, "history": (HISTORY_ROOM, HISTORY_QUANTUM)}
    return (
        Variant(
            "tuned_budget",
            f"default policy with budget.context_limit {TUNED_CONTEXT_LIMIT}",
            {"policy": tuned_policy()},
        ),
        Variant(
            "quantized_eviction",
            f"history evicted in {HISTORY_QUANTUM}-token quanta within {HISTORY_ROOM} tokens;"
            " no newest-200-events snapshot bound",
            quantized,
        ),
        Variant(
            "both_fixes",
            "quantized_eviction, and evidence rendered after recent history, not before it",
            {**quantized, "renderer": EvidenceAfterHistoryRenderer()},
        ),
    )


VARIANTS: tuple[Variant, ...] = _variants()
