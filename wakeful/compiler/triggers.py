"""Pass 1 — triggers: the goal decides which gated rules and skills are in play.

A trigger fires when any goal path matches one of its globs (``fnmatchcase``, where ``*``
also crosses ``/``), any goal intent is listed, or the goal's task class is listed. Blocks
named in some trigger's ``inject`` are gated: present only when a firing trigger injects
them. Firing triggers are applied in precedence order (highest first, then name), and the
first one to mention a block decides whether it is injected or suppressed — that is the
explicit precedence. A firing trigger that injects ``skill:<name>`` for a skill the
snapshot does not hold fails the compile (a skill is instructions the policy promised;
leaving them out silently would be worse), and a skill the model loaded
(``LOADED_META``) is not gated: it stays for the session while the task does. Loaded for
one task class (``LOADED_TASK_META``: the goal's task class, or else its intents), it is
unloaded when a goal of another task class comes (:func:`task_of`; a goal of no task class
changes nothing), unless a firing trigger injects it. Inline ``rules`` of firing triggers
become semi-stable rule blocks, which change with the goal but not with new events.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from itertools import compress, repeat
from operator import attrgetter, eq

from wakeful.compiler.blocks import Block, BlockKind, Goal, Stability
from wakeful.compiler.policy import TriggerRule, WindowPolicy
from wakeful.compiler.state import Partition
from wakeful.compiler.work import Exclusion, Facts
from wakeful.errors import ConfigError

SKILL_PREFIX = "skill:"  # a skill body's block id: ``skill:<name>`` (``wakeful.skills``)
LOADED_META = "loaded"  # a skill body the model loaded: the event that loaded it
LOADED_TASK_META = "loaded_for"  # ...and the task class of the goal it was loaded under
SKILLS_INDEX_ID = "skills:index"  # present when the agent has skills (wakeful.skills)
UNLOAD_RULE = "skills.task_class"
_SKILL_BODY = BlockKind.SKILL_BODY.value
_KIND = attrgetter("kind_s")


def task_of(goal: Goal) -> str:
    """A goal's task class: its ``task_class``, else its intents (sorted, comma-joined);
    "" when it has neither."""
    if goal.task_class:
        return goal.task_class
    return ",".join(sorted(goal.intents))


def matches(trigger: TriggerRule, goal: Goal) -> bool:
    if goal.task_class is not None and goal.task_class in trigger.task_classes:
        return True
    if any(intent in trigger.intents for intent in goal.intents):
        return True
    return any(fnmatchcase(path, glob) for path in goal.paths for glob in trigger.paths)


def firing(triggers: tuple[TriggerRule, ...], goal: Goal) -> list[TriggerRule]:
    """Firing triggers in precedence order."""
    return sorted((t for t in triggers if matches(t, goal)), key=lambda t: (-t.precedence, t.name))


def gate(
    triggers: tuple[TriggerRule, ...], goal: Goal, part: Partition
) -> tuple[dict[Facts, Exclusion], dict[Facts, str]]:
    """Which snapshot blocks the goal suppresses or leaves gated, and which it injects.

    Only blocks named by some trigger (by id or supersession key) can be affected, so they
    are looked up by name instead of scanning the snapshot.
    """
    excluded: dict[Facts, Exclusion] = {}
    injected: dict[Facts, str] = {}
    if SKILLS_INDEX_ID in part.by_id:
        unloaded(goal, part, excluded)
    if not triggers:
        return excluded, injected
    fired = firing(triggers, goal)
    decision: dict[str, tuple[str, str]] = {}
    for trigger in fired:
        for ref in trigger.inject:
            decision.setdefault(ref, ("inject", trigger.name))
        for ref in trigger.suppress:
            decision.setdefault(ref, ("suppress", trigger.name))
    for trigger in fired:  # fail closed: a skill a trigger would inject must exist
        for ref in trigger.inject:
            if ref.startswith(SKILL_PREFIX) and ref not in part.by_id and not part.by_key.get(ref):
                raise ConfigError(
                    f"trigger {trigger.name!r} injects {ref!r}, but the agent has no skill"
                    f" {ref.removeprefix(SKILL_PREFIX)!r}; add it to the agent's skills"
                    " directory or remove it from the trigger"
                )
    gated: dict[str, list[str]] = {}
    for trigger in triggers:
        for ref in trigger.inject:
            gated.setdefault(ref, []).append(trigger.name)
    named: dict[Facts, None] = {}
    for ref in (*decision, *gated):
        f = part.by_id.get(ref)
        if f is not None:
            named[f] = None
        named.update(part.by_key.get(ref, {}))
    for f in named:
        key = f.block.supersession_key
        hit = decision.get(f.id) or (decision.get(key) if key is not None else None)
        if hit is not None:
            action, name = hit
            if action == "inject":
                injected[f] = name
                excluded.pop(f, None)  # injected for this goal: in, whatever it was loaded for
            else:
                excluded[f] = Exclusion("suppressed", f"triggers.{name}", f"by {name}")
            continue
        names = gated.get(f.id) or (gated.get(key) if key is not None else None)
        if names and LOADED_META not in f.block.meta:  # a loaded skill is in, whatever the goal
            excluded[f] = Exclusion(
                "not_triggered", f"triggers.{names[0]}", "gated by " + ", ".join(names)
            )
    return excluded, injected


def unloaded(goal: Goal, part: Partition, excluded: dict[Facts, Exclusion]) -> None:
    """Leave out the skills the model loaded for another task class than the goal's."""
    task = task_of(goal)
    if not task:
        return
    snap = part.snap
    for f in compress(snap, map(eq, map(_KIND, snap), repeat(_SKILL_BODY))):  # in C
        meta = f.block.meta
        loaded_for = meta.get(LOADED_TASK_META)
        if LOADED_META in meta and loaded_for and loaded_for != task:
            excluded[f] = Exclusion(
                "unloaded",
                UNLOAD_RULE,
                f"loaded for task {loaded_for!r}; this goal's task is {task!r}",
            )


def trigger_rules(policy: WindowPolicy, goal: Goal) -> list[tuple[Block, str]]:
    """Inline rules of the firing triggers, as semi-stable rule blocks, with their trigger."""
    out = []
    order = 0
    for trigger in firing(policy.triggers, goal) if policy.triggers else []:
        for n, text in enumerate(trigger.rules):
            block = Block(
                id=f"trigger:{trigger.name}:{n}",
                kind=BlockKind.SYSTEM_RULE,
                text=text,
                source=f"policy:{policy.name}:triggers.{trigger.name}",
                seq=order,
                stability=Stability.SEMI_STABLE,
                importance=1.0,
            )
            order += 1
            out.append((block, trigger.name))
    return out
