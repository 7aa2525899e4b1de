"""What-if variants of Wakeful's window for the cache benchmark (comparisons, not defaults).

Each variant changes one thing, so the report can say what it is worth (:func:`variants`):

* ``tuned_budget`` — the default policy with ``budget.context_limit`` lowered so that the
  window is about the size of the sliding window's: smaller windows, more evictions.
* ``greedy_eviction`` — history evicted one event at a time, as a best-first budget and a
  newest-N-events snapshot bound do: ``budget.history_quantum = 0`` and a snapshot tail
  that moves with every event (``recent_page = 1``). Each call then drops the oldest event
  and shifts the start of the history, exactly like a sliding window.
* ``evidence_before_history`` — retrieved evidence rendered before the history of earlier
  wakes instead of after it (:class:`EvidenceBeforeHistoryRenderer`). Evidence changes at
  every wake; placed before the history it invalidates all of it.

The renderer only reorders the request body: the ledger still lists blocks in the
compiler's placement order, so prefix-based ledger tools (``diff_ledgers``) do not apply
to its windows; the benchmark measures them through the simulator only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wakeful.compiler import AnthropicRenderer, WindowPolicy
from wakeful.compiler.blocks import Segment
from wakeful.compiler.place import Layout
from wakeful.compiler.render.base import Item

__all__ = ["EvidenceBeforeHistoryRenderer", "Variant", "greedy_policy", "variants"]

TUNED_CONTEXT_LIMIT = 48_000


class EvidenceBeforeHistoryRenderer(AnthropicRenderer):
    """Summaries, *then* evidence, then the history of earlier wakes and the current one."""

    def conversation(self, layout: Layout) -> list[Item]:
        items = super().conversation(layout)
        evidence = [i for i in items if i.segment is Segment.EVIDENCE]
        rest = [i for i in items if i.segment is not Segment.EVIDENCE]
        at = next((n for n, i in enumerate(rest) if i.segment is not Segment.SUMMARIES), 0)
        return rest[:at] + evidence + rest[at:]


@dataclass(frozen=True)
class Variant:
    name: str
    what: str
    options: dict[str, Any]


def _with_budget(policy: WindowPolicy, name: str, **changes: Any) -> WindowPolicy:
    data = policy.model_dump()
    data["name"] = f"{policy.name}-{name}"
    data["budget"].update(changes)
    return WindowPolicy.model_validate(data)


def tuned_policy(policy: WindowPolicy) -> WindowPolicy:
    return _with_budget(
        policy, f"context-{TUNED_CONTEXT_LIMIT // 1000}k", context_limit=TUNED_CONTEXT_LIMIT
    )


def greedy_policy(policy: WindowPolicy) -> WindowPolicy:
    return _with_budget(policy, "greedy", history_quantum=0.0)


def variants(policy: WindowPolicy) -> tuple[Variant, ...]:
    """The variants of ``policy`` (the one the benchmark's own Wakeful runs with)."""
    return (
        Variant(
            "tuned_budget",
            f"budget.context_limit {TUNED_CONTEXT_LIMIT}",
            {"policy": tuned_policy(policy)},
        ),
        Variant(
            "greedy_eviction",
            "history evicted one event at a time: budget.history_quantum 0, snapshot tail"
            " moving with every event",
            {"policy": greedy_policy(policy), "recent_page": 1},
        ),
        Variant(
            "evidence_before_history",
            "evidence rendered before the history of earlier wakes, not after it",
            {"renderer": EvidenceBeforeHistoryRenderer()},
        ),
    )
