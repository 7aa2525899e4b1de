"""Pass 1 — triggers: the goal decides which gated rules and skills are in play.

A trigger fires when any goal path matches one of its globs (``fnmatchcase``, where ``*``
also crosses ``/``), any goal intent is listed, or the goal's task class is listed. Blocks
named in some trigger's ``inject`` are gated: present only when a firing trigger injects
them. Firing triggers are applied in precedence order (highest first, then name), and the
first one to mention a block decides whether it is injected or suppressed — that is the
explicit precedence. Inline ``rules`` of firing triggers become semi-stable rule blocks,
which change with the goal but not with new events.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from wakeful.compiler.blocks import Block, BlockKind, Goal, Stability
from wakeful.compiler.policy import Trigger
from wakeful.compiler.work import Exclusion, Work


def matches(trigger: Trigger, goal: Goal) -> bool:
    if goal.task_class is not None and goal.task_class in trigger.task_classes:
        return True
    if any(intent in trigger.intents for intent in goal.intents):
        return True
    return any(fnmatchcase(path, glob) for path in goal.paths for glob in trigger.paths)


def firing(triggers: tuple[Trigger, ...], goal: Goal) -> list[Trigger]:
    """Firing triggers in precedence order."""
    return sorted((t for t in triggers if matches(t, goal)), key=lambda t: (-t.precedence, t.name))


def apply_triggers(work: Work) -> None:
    triggers = work.policy.triggers
    if not triggers:
        return
    fired = firing(triggers, work.goal)
    decision: dict[str, tuple[str, str]] = {}
    for trigger in fired:
        for ref in trigger.inject:
            decision.setdefault(ref, ("inject", trigger.name))
        for ref in trigger.suppress:
            decision.setdefault(ref, ("suppress", trigger.name))
    gated: dict[str, list[str]] = {}
    for trigger in triggers:
        for ref in trigger.inject:
            gated.setdefault(ref, []).append(trigger.name)

    for idx in range(work.n_snapshot):
        facts = work.facts[idx]
        key = facts.block.supersession_key
        hit = decision.get(facts.id) or (decision.get(key) if key is not None else None)
        if hit is not None:
            action, name = hit
            if action == "inject":
                work.injected[idx] = name
            else:
                work.exclude(idx, Exclusion("suppressed", f"triggers.{name}", f"by {name}"))
            continue
        names = gated.get(facts.id) or (gated.get(key) if key is not None else None)
        if names:
            work.exclude(
                idx,
                Exclusion("not_triggered", f"triggers.{names[0]}", "gated by " + ", ".join(names)),
            )

    order = 0
    for trigger in fired:
        for n, text in enumerate(trigger.rules):
            block = Block(
                id=f"trigger:{trigger.name}:{n}",
                kind=BlockKind.SYSTEM_RULE,
                text=text,
                source=f"policy:{work.policy.name}:triggers.{trigger.name}",
                seq=order,
                stability=Stability.SEMI_STABLE,
                importance=1.0,
            )
            order += 1
            work.injected[work.add_synthetic(block)] = trigger.name
