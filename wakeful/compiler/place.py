"""Pass 8 — place: order the admitted blocks, stable first.

    stable (tools, then instructions and rules) → semi-stable → summaries → recent
    → ask (the current wake) → evidence

Evidence is what retrieval brought for this wake, and it goes after the wake's content,
where the next call of the wake and every later wake find it again: the compile activity
records it with the wake (an ``evidence`` event), so it stays in place as the wake grows
and as history once the wake ends, written to the prompt cache once and read from then
on. Placed before the current wake it would sit between the history and each new wake,
and every wake would write the previous wake and its own evidence again. Only the first
call of a wake brings evidence (``substrate.indexing.retrieve_into``); a later call and a
later wake see it as an event of the wake.

Within segments: cacheable segments by kind then ``(seq, id)``; summaries, recent turns and
the tail chronologically, with every tool result directly after its call; evidence by score
with the strongest items at both edges and the weakest in the middle, where long-context
models attend least (retrieved turns together, as a dated transcript). Collapsed tool
output gets its note as text here; nothing else about a block changes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

from wakeful.compiler.blocks import AgentProfile, Block, BlockKind, Goal, Segment
from wakeful.compiler.canonical import canonical_json
from wakeful.compiler.policy import WindowPolicy
from wakeful.compiler.rank import keep_order
from wakeful.compiler.work import Facts, Work

T = TypeVar("T")

_SEMI_KIND_ORDER = {
    BlockKind.SYSTEM_RULE: 0,
    BlockKind.SKILL_INDEX: 1,
    BlockKind.TASK_FRAME: 2,
    BlockKind.LOAD_BEARING: 3,
    BlockKind.HANDOFF_NOTE: 4,
    BlockKind.SKILL_BODY: 5,
}


class Placed(NamedTuple):
    """One block in its final place; ``block`` carries collapsed text if collapsed."""

    block: Block
    segment: Segment
    stale: bool
    facts: Facts


@dataclass(frozen=True, slots=True)
class Layout:
    """The ordered window, before any provider syntax."""

    agent: AgentProfile
    goal: Goal
    policy: WindowPolicy
    tools: tuple[Placed, ...]
    system: tuple[Placed, ...]
    semi_stable: tuple[Placed, ...]
    summaries: tuple[Placed, ...]
    recent: tuple[Placed, ...]
    evidence: tuple[Placed, ...]
    tail: tuple[Placed, ...]
    # How renderers spell JSON and join segment texts: ``canonical_json`` and ``str.join``,
    # or equivalents that remember their results (``encode.JsonMemo``).
    encode: Callable[[Any], str] = canonical_json
    join: Callable[[str, list[str]], str] = str.join

    def ordered(self) -> tuple[Placed, ...]:
        return (
            self.tools
            + self.system
            + self.semi_stable
            + self.summaries
            + self.recent
            + self.tail
            + self.evidence
        )


def edges_first(ranked: list[T]) -> list[T]:
    """Best at the front, second best at the back, and so on inwards."""
    return ranked[0::2] + ranked[1::2][::-1]


def evidence_order(work: Work, heads: list[Facts]) -> list[Facts]:
    """Edges-first by score, where the retrieved turns that share the conversation frame
    move as one unit (at their best turn's rank) and read as a transcript inside it: groups
    by date, turns in conversation order."""
    units: list[list[Facts]] = []
    shared: list[Facts] = []
    for f in sorted(heads, key=lambda f: keep_order(work, f)):
        if f.group is None:
            units.append([f])
        else:
            if not shared:
                units.append(shared)
            shared.append(f)
    first: dict[str, tuple[float, str]] = {}
    for f in shared:
        assert f.group is not None
        first[f.group] = min(first.get(f.group, (f.ts, f.group)), (f.ts, f.group))
    shared.sort(key=lambda f: (first[f.group or ""], f.seq, f.id))
    return [f for unit in edges_first(units) for f in unit]


def _nan_safe(work: Work, heads: list[Facts]) -> list[Facts]:
    """``heads`` in admission order, with the mandatory ones in snapshot order when a score
    is NaN: NaN has no order, so what a sort makes of it depends on the order it is given,
    and that is the order the passes admit in (mandatory blocks first, by position)."""
    if not work.part.nan_keys:
        return heads
    pair_key = work.part.pair_key
    if all(k == k for k in (pair_key.get(f, f.key) for f in heads)):
        return heads
    pos = work.position()
    mandatory = [f for f in heads if work.admitted.get(f) == "load_bearing"]
    rest = [f for f in heads if work.admitted.get(f) != "load_bearing"]
    return sorted(mandatory, key=pos.__getitem__) + rest


def place(
    work: Work,
    encode: Callable[[Any], str] = canonical_json,
    join: Callable[[str, list[str]], str] = str.join,
) -> Layout:
    part = work.part
    by_segment: dict[Segment, list[Facts]] = {seg: [] for seg in Segment}
    tail = set(work.tail)
    for f in work.admitted:
        if f not in tail:
            by_segment[f.segment].append(f)

    def chrono(f: Facts) -> tuple[int, str]:
        return (f.seq, f.id)

    def with_partners(heads: list[Facts]) -> list[Facts]:
        out: list[Facts] = []
        for f in sorted(heads, key=chrono):
            if f.block.kind is BlockKind.TOOL_RESULT and f in part.partner:
                continue  # emitted right after its call
            out.append(f)
            other = part.partner.get(f)
            if other is not None:
                out.append(other)
        return out

    stable = by_segment[Segment.STABLE]
    tools = sorted((f for f in stable if f.block.kind is BlockKind.TOOL_SCHEMA), key=chrono)
    rules = sorted(
        (f for f in stable if f.block.kind is not BlockKind.TOOL_SCHEMA),
        key=lambda f: (f is not work.instructions, f.seq, f.id),
    )
    semi = sorted(
        by_segment[Segment.SEMI_STABLE],
        key=lambda f: (_SEMI_KIND_ORDER.get(f.block.kind, 9), f.seq, f.id),
    )
    evidence = evidence_order(work, _nan_safe(work, by_segment[Segment.EVIDENCE]))

    collapsed, stale = part.collapsed, work.stale

    def placed(items: list[Facts], segment: Segment | None = None) -> tuple[Placed, ...]:
        return tuple(
            [
                Placed(
                    shown(f, collapsed[f][0]) if f in collapsed else f.block,
                    segment or f.segment,
                    stale.get(f, False),
                    f,
                )
                for f in items
            ]
        )

    layout = Layout(
        agent=work.snapshot.agent,
        goal=work.goal,
        policy=work.policy,
        tools=placed(tools),
        system=placed(rules),
        semi_stable=placed(semi),
        summaries=placed(sorted(by_segment[Segment.SUMMARIES], key=chrono)),
        recent=placed(with_partners(by_segment[Segment.RECENT])),
        evidence=placed(evidence),
        tail=placed(with_partners(work.tail), Segment.ASK),
        encode=encode,
        join=join,
    )
    work.placed = [p.facts for p in layout.ordered()]
    return layout


def shown(f: Facts, note: str) -> Block:
    """The block as placed when its output is collapsed to ``note`` (memoised)."""
    memo = f.shown
    if memo is None or memo[0].text != note:
        block = f.block.model_copy(update={"text": note})
        memo = f.shown = (block, block.hash)
    return memo[0]
