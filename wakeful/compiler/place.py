"""Pass 8 — place: order the admitted blocks, stable first.

    stable (tools, then instructions and rules) → semi-stable → summaries → evidence
    → recent → ask (the current wake)

Within segments: cacheable segments by kind then ``(seq, id)``; summaries, recent turns and
the tail chronologically, with every tool result directly after its call; evidence by score
with the strongest items at both edges and the weakest in the middle, where long-context
models attend least (retrieved turns together, as a dated transcript). Collapsed tool
output gets its note as text here; nothing else about a block changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from wakeful.compiler.blocks import AgentProfile, Block, BlockKind, Goal, Segment
from wakeful.compiler.policy import Policy
from wakeful.compiler.rank import keep_order
from wakeful.compiler.work import Work

_SEMI_KIND_ORDER = {
    BlockKind.SYSTEM_RULE: 0,
    BlockKind.SKILL_INDEX: 1,
    BlockKind.TASK_FRAME: 2,
    BlockKind.LOAD_BEARING: 3,
    BlockKind.HANDOFF_NOTE: 4,
    BlockKind.SKILL_BODY: 5,
}


@dataclass(frozen=True, slots=True)
class Placed:
    """One block in its final place; ``block`` carries collapsed text if collapsed."""

    block: Block
    segment: Segment
    stale: bool
    index: int


@dataclass(frozen=True, slots=True)
class Layout:
    """The ordered window, before any provider syntax."""

    agent: AgentProfile
    goal: Goal
    policy: Policy
    tools: tuple[Placed, ...]
    system: tuple[Placed, ...]
    semi_stable: tuple[Placed, ...]
    summaries: tuple[Placed, ...]
    evidence: tuple[Placed, ...]
    recent: tuple[Placed, ...]
    tail: tuple[Placed, ...]

    def ordered(self) -> tuple[Placed, ...]:
        return (
            self.tools
            + self.system
            + self.semi_stable
            + self.summaries
            + self.evidence
            + self.recent
            + self.tail
        )


T = TypeVar("T")


def edges_first(ranked: list[T]) -> list[T]:
    """Best at the front, second best at the back, and so on inwards."""
    return ranked[0::2] + ranked[1::2][::-1]


def evidence_order(work: Work, indices: list[int]) -> list[int]:
    """Edges-first by score, where the retrieved turns that share the conversation frame
    move as one unit (at their best turn's rank) and read as a transcript inside it: groups
    by date, turns in conversation order."""
    facts = work.facts
    units: list[list[int]] = []
    shared: list[int] = []
    for idx in sorted(indices, key=lambda i: keep_order(work, i)):
        if facts[idx].group is None:
            units.append([idx])
        else:
            if not shared:
                units.append(shared)
            shared.append(idx)
    first: dict[str, tuple[float, str]] = {}
    for idx in shared:
        f = facts[idx]
        assert f.group is not None
        first[f.group] = min(first.get(f.group, (f.ts, f.group)), (f.ts, f.group))
    shared.sort(key=lambda i: (first[facts[i].group or ""], facts[i].seq, facts[i].id))
    return [idx for unit in edges_first(units) for idx in unit]


def place(work: Work) -> Layout:
    facts = work.facts
    by_segment: dict[Segment, list[int]] = {seg: [] for seg in Segment}
    tail = set(work.tail)
    for idx in work.admitted:
        if idx not in tail:
            by_segment[facts[idx].segment].append(idx)

    def chrono(idx: int) -> tuple[int, str]:
        return (facts[idx].seq, facts[idx].id)

    def with_partners(heads: list[int]) -> list[int]:
        out: list[int] = []
        for idx in sorted(heads, key=chrono):
            if facts[idx].block.kind is BlockKind.TOOL_RESULT and idx in work.partner:
                continue  # emitted right after its call
            out.append(idx)
            other = work.partner.get(idx)
            if other is not None:
                out.append(other)
        return out

    stable = by_segment[Segment.STABLE]
    tools = sorted((i for i in stable if facts[i].block.kind is BlockKind.TOOL_SCHEMA), key=chrono)
    rules = sorted(
        (i for i in stable if facts[i].block.kind is not BlockKind.TOOL_SCHEMA),
        key=lambda i: (i != work.instructions, facts[i].seq, facts[i].id),
    )
    semi = sorted(
        by_segment[Segment.SEMI_STABLE],
        key=lambda i: (_SEMI_KIND_ORDER.get(facts[i].block.kind, 9), facts[i].seq, facts[i].id),
    )
    evidence = evidence_order(work, by_segment[Segment.EVIDENCE])

    def placed(indices: list[int], segment: Segment | None = None) -> tuple[Placed, ...]:
        out = []
        for idx in indices:
            block = facts[idx].block
            note = work.collapsed.get(idx)
            if note is not None:
                block = block.model_copy(update={"text": note[0]})
            seg = segment or facts[idx].segment
            out.append(Placed(block, seg, work.stale.get(idx, False), idx))
        return tuple(out)

    layout = Layout(
        agent=work.snapshot.agent,
        goal=work.goal,
        policy=work.policy,
        tools=placed(tools),
        system=placed(rules),
        semi_stable=placed(semi),
        summaries=placed(sorted(by_segment[Segment.SUMMARIES], key=chrono)),
        evidence=placed(evidence),
        recent=placed(with_partners(by_segment[Segment.RECENT])),
        tail=placed(with_partners(work.tail), Segment.ASK),
    )
    work.placed = [p.index for p in layout.ordered()]
    return layout
