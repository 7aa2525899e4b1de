"""Per-trigger knobs: what a firing trigger changes for one compile.

A trigger (``TriggerRule``) may carry knobs besides the blocks it injects: a smaller input
budget (``budget_tokens``), a cap on earlier tool output (``tool_output_max_tokens``),
freshness per block kind (``freshness``), collapsing failed tool results a later equal call
made good (``evict_resolved_errors``), and an action after the wake (``action``:
``handoff`` or ``compact``). :func:`with_knobs` folds the firing triggers' knobs into the
policy the passes read; without a firing trigger that sets one, it returns the very policy
it was given, so a compile without knobs is the compile it always was.

Every knob that is set on a firing trigger is named in the ledger's decisions
(:func:`knob_decisions`): ``trigger.<name>.<knob>`` with its value and what it did there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from wakeful.compiler.blocks import Goal
from wakeful.compiler.ledger import COLLAPSED, Ledger
from wakeful.compiler.policy import KNOBS, WindowPolicy
from wakeful.compiler.triggers import firing

__all__ = ["KnobUse", "knob_decisions", "trigger_actions", "with_knobs"]

# The ledger rule of a result each eviction knob collapsed (live_output.collapse_rule).
TOOL_OUTPUT_RULE = "eviction.tool_output_max_tokens"
RESOLVED_ERRORS_RULE = "eviction.evict_resolved_errors"


@dataclass(frozen=True, slots=True)
class KnobUse:
    """One knob a firing trigger set: the trigger, the knob and its value as given."""

    trigger: str
    knob: str
    value: Any
    before: Any  # the policy's own value it replaced (for the ledger)

    @property
    def key(self) -> str:
        return f"trigger.{self.trigger}.{self.knob}"


def _set_knobs(policy: WindowPolicy, goal: Goal) -> list[tuple[str, str, Any]]:
    """(trigger, knob, value) of each knob the firing triggers set, the first in
    precedence order winning; ``freshness`` merges per kind the same way."""
    if not policy.triggers:
        return []
    out: list[tuple[str, str, Any]] = []
    taken: set[str] = set()
    kinds: set[str] = set()
    for trigger in firing(policy.triggers, goal):
        for knob in KNOBS:
            value = getattr(trigger, knob)
            if value is None:
                continue
            if knob == "freshness":
                mine = {k: h for k, h in value.items() if k not in kinds}
                kinds.update(mine)
                if mine:
                    out.append((trigger.name, knob, mine))
            elif knob not in taken:
                taken.add(knob)
                out.append((trigger.name, knob, value))
    return out


def with_knobs(policy: WindowPolicy, goal: Goal) -> tuple[WindowPolicy, list[KnobUse]]:
    """The policy the passes compile ``goal`` by, and the knobs that changed it (the same
    policy object, and no knobs, when no firing trigger sets one)."""
    chosen = _set_knobs(policy, goal)
    if not chosen:
        return policy, []
    data = policy.model_dump()
    uses: list[KnobUse] = []
    for trigger, knob, value in chosen:
        before: Any = None
        if knob == "budget_tokens":
            budget = data["budget"]
            before = budget["context_limit"] - budget["output_reserve"]
            if value < before:
                budget["context_limit"] = budget["output_reserve"] + value
        elif knob == "tool_output_max_tokens":
            before = data["eviction"].get("tool_output_max_tokens", 0)
            data["eviction"]["tool_output_max_tokens"] = value
        elif knob == "evict_resolved_errors":
            before = data["eviction"].get("evict_resolved_errors", False)
            data["eviction"]["evict_resolved_errors"] = value
        elif knob == "freshness":
            ages = data["staleness"]["max_age_hours"]
            before = {k: ages.get(k) for k in value}
            ages.update(value)
        uses.append(KnobUse(trigger, knob, value, before))
    return WindowPolicy.model_validate(data), uses


def trigger_actions(policy: WindowPolicy, goal: Goal) -> tuple[str, str] | None:
    """The action the firing triggers ask for after the wake (``handoff`` or ``compact``)
    and the trigger that asked, or None."""
    for trigger, knob, value in _set_knobs(policy, goal):
        if knob == "action":
            return value, trigger
    return None


def _value(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{getattr(k, 'value', k)}={h:g}h" for k, h in sorted(value.items()))
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _collapsed(ledger: Ledger, rule: str) -> tuple[int, int]:
    rows = [r for r in ledger.rows if r.status == COLLAPSED and r.rule == rule]
    return len(rows), sum(r.tokens_freed for r in rows)


def _what(use: KnobUse, ledger: Ledger) -> str:
    if use.knob == "budget_tokens":
        if use.value >= use.before:
            return f"left the policy's input budget of {use.before} tokens (not above it)"
        return f"input budget {use.before} -> {ledger.input_budget} tokens"
    if use.knob == "tool_output_max_tokens":
        n, freed = _collapsed(ledger, TOOL_OUTPUT_RULE)
        return f"collapsed {n} earlier tool result(s) over it to a note, {freed} tokens freed"
    if use.knob == "evict_resolved_errors":
        if not use.value:
            return "resolved errors kept whole"
        n, freed = _collapsed(ledger, RESOLVED_ERRORS_RULE)
        return f"collapsed {n} resolved tool error(s) to a note, {freed} tokens freed"
    if use.knob == "freshness":
        rows = [r for r in ledger.rows if r.reason == "stale" and r.detail.startswith("older")]
        kinds = {getattr(k, "value", k) for k in use.value}
        n = sum(1 for r in rows if r.kind in kinds)
        return f"{n} block(s) of those kinds left out as older than their max age"
    if use.value == "handoff":
        return "the session ends with a handoff note after this wake"
    return "the agent's history is consolidated after this wake"


def knob_decisions(uses: Sequence[KnobUse], ledger: Ledger) -> dict[str, str]:
    """The ledger's decisions for the knobs that acted: ``trigger.<name>.<knob>`` ->
    ``<value>: <what it did>``."""
    return {use.key: f"{_value(use.value)}: {_what(use, ledger)}" for use in uses}
