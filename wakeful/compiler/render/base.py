"""What every renderer shares: the text of each segment and the flattened conversation.

A renderer is a class of small overridable methods (``stable_text``, ``evidence_text``,
``conversation`` …), in the manner of DSPy adapters: subclass and override one to change one
thing. Renderers return, besides the body, the *elements* of the request in the provider's
cache order (tools, system, messages) and *marks* naming segment ends, from which the
compiler derives prefix hashes and cache breakpoints.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from itertools import groupby
from typing import Any, ClassVar, NamedTuple

from wakeful.compiler.blocks import Block, BlockKind, Role, Segment
from wakeful.compiler.evidence import is_evidence
from wakeful.compiler.framing import (
    DATA_NOTICE,
    HISTORY_GAP,
    conversation_text,
    evidence_text,
    section_text,
)
from wakeful.compiler.place import Layout, Placed
from wakeful.compiler.replies import call_arguments, reply_key
from wakeful.compiler.select import role_of

# Wire names of roles and segments (a dict lookup is cheaper than ``Enum.value``).
ROLE = {role: role.value for role in Role}
SEGMENT = {seg: seg.value for seg in Segment}


class Item(NamedTuple):
    """One piece of conversation before provider syntax."""

    kind: str  # "text" | "tool_use" | "tool_result"
    role: Role
    text: str
    segment: Segment
    block: Block | None
    mergeable: bool
    reply: str | None = None  # the model reply an assistant item is part of, when known


@dataclass(frozen=True, slots=True)
class Mark:
    """A segment end: a breakpoint (``explicit``) or a checkpoint for diffing prefixes."""

    name: str
    element: int
    block_id: str
    ttl: str | None
    explicit: bool


@dataclass(frozen=True, slots=True)
class Rendered:
    request: dict[str, Any]
    stable: Any
    semi_stable: Any
    elements: list[str]  # canonical JSON of each cache-order element, without cache markers
    element_blocks: list[str]  # the last block id that each element carries
    paths: list[str]  # JSON pointer of each element in the request
    marks: list[Mark]
    # True when each element's JSON is that of the value at its path, except for
    # ``cache_control`` keys added after encoding (lets ``encode.py`` splice the request).
    spliceable: bool = False
    # (container, key) of each element in the request, when the renderer knows them.
    slots: list[tuple[Any, Any]] | None = None


def framed_evidence(placed: Placed) -> str:
    """``evidence_text`` of a placed block, remembered on its facts (framing is pure)."""
    f, block, stale = placed.facts, placed.block, placed.stale
    memo = f.framed
    if memo is None or memo[0] is not block or memo[1] != stale:
        memo = f.framed = (block, stale, evidence_text(block, stale))
    return memo[2]


def framed_section(placed: Placed) -> str:
    """``section_text`` of a placed block, remembered on its facts."""
    f, block = placed.facts, placed.block
    memo = f.framed
    if memo is None or memo[0] is not block or memo[1] is not None:
        memo = f.framed = (block, None, section_text(block))
    return memo[2]


def sent_arguments(placed: Placed) -> str:
    """``call_arguments`` of a placed tool call, remembered on its facts."""
    f, block = placed.facts, placed.block
    memo = f.arguments
    if memo is None or memo[0] is not block:
        memo = f.arguments = (block, call_arguments(block))
    return memo[1]


class Renderer(ABC):
    """Provider-independent pieces; subclasses add the provider's syntax."""

    provider: ClassVar[str] = ""

    def stable_text(self, layout: Layout) -> str:
        """The instructions and rules. The data notice is not here: it goes with the first
        data the window holds (``with_data_notice``), so a window without any pays nothing
        for it, and data arriving later adds it after the cached prefix instead of changing
        the instructions (which would rewrite the whole cache)."""
        parts = [self.rule_text(p) for p in layout.system if p.block.text]
        return layout.join("\n\n", parts or [DATA_NOTICE])

    def rule_text(self, placed: Placed) -> str:
        return placed.block.text

    def semi_stable_text(self, layout: Layout) -> str:
        parts = list(map(framed_section, layout.semi_stable))
        if semi_stable_holds_data(layout):
            parts.append(DATA_NOTICE)
        return layout.join("\n\n", parts)

    def summaries_text(self, layout: Layout) -> str:
        return layout.join("\n\n", list(map(framed_section, layout.summaries)))

    def evidence_text(self, layout: Layout) -> str:
        """Each evidence block in its frame; the retrieved turns (placed together by
        ``place``) in one shared frame, under a date line per session and day."""
        parts: list[str] = []
        shared = [p for p in layout.evidence if p.facts.group is not None]
        for placed in layout.evidence:
            if placed.facts.group is None:
                parts.append(framed_evidence(placed))
            elif placed is shared[0]:
                groups = groupby(shared, key=lambda p: p.facts.group)
                parts.append(
                    conversation_text([[(p.block, p.stale) for p in g] for _, g in groups])
                )
        return layout.join("\n\n", parts)

    def conversation(self, layout: Layout) -> list[Item]:
        """Summaries as one user item, the history of earlier wakes, the current wake, then
        the evidence this call brings as one user item.

        History (``recent``) user text may merge with its neighbours; current-wake items
        never do, so the wake's earlier content blocks keep their bytes as the wake grows.
        The model's own turns never merge, in either: each reply is sent back as the blocks
        it was (``reply_order``), so a wake that becomes history keeps its bytes too.
        Evidence never merges either: it is recorded with the wake as the text sent here,
        and comes back as an item of its own in every later window (``is_evidence``).
        """
        items: list[Item] = []
        summaries = self.summaries_text(layout)
        if summaries:
            block = layout.summaries[-1].block
            items.append(Item("text", Role.USER, summaries, Segment.SUMMARIES, block, False))
        recent: list[Item] = []
        for placed in layout.recent:
            recent.extend(self.event_items(placed, mergeable=True))
        items.extend(reply_order(recent))
        tail: list[Item] = []
        for placed in layout.tail:
            tail.extend(self.event_items(placed, mergeable=False))
        items.extend(reply_order(tail))
        evidence = self.evidence_text(layout)
        if evidence:
            block = layout.evidence[-1].block
            items.append(Item("text", Role.USER, evidence, Segment.EVIDENCE, block, False))
        if items and items[0].role is Role.ASSISTANT:
            items.insert(0, Item("text", Role.USER, HISTORY_GAP, Segment.RECENT, None, False))
        if layout.system and not semi_stable_holds_data(layout):
            with_data_notice(items)
        return items

    def event_items(self, placed: Placed, *, mergeable: bool) -> list[Item]:
        """The items of one placed event. A tool call is its ``tool_use`` alone, whose text
        is its arguments as sent (the block's text is their spelling, never a text block of
        its own); the model's text never merges with anything, so an assistant message
        holds exactly the blocks of the reply it was."""
        block, seg = placed.block, placed.segment
        if block.kind is BlockKind.TOOL_CALL:
            args = sent_arguments(placed)
            return [Item("tool_use", Role.ASSISTANT, args, seg, block, False, reply_key(block))]
        if block.kind is BlockKind.TOOL_RESULT:
            return [Item("tool_result", Role.USER, block.text, seg, block, False)]
        if not block.text:
            return []
        role = role_of(block)
        if role is Role.ASSISTANT:
            return [Item("text", role, block.text, seg, block, False, reply_key(block))]
        return [Item("text", role, block.text, seg, block, mergeable and not is_evidence(block))]

    def tool_name(self, block: Block) -> str:
        return block.tool_name or block.id

    def tool_schema(self, block: Block) -> dict[str, Any]:
        """A tool's input schema; a tool that declares none takes any object."""
        return block.tool_input if block.tool_input is not None else {"type": "object"}

    @abstractmethod
    def render(self, layout: Layout) -> Rendered: ...


# Sections of the semi-stable segment that hold data gathered from the world.
DATA_SECTIONS = frozenset({BlockKind.HANDOFF_NOTE, BlockKind.SUMMARY})


def semi_stable_holds_data(layout: Layout) -> bool:
    return any(p.block.kind in DATA_SECTIONS for p in layout.semi_stable)


def holds_data(item: Item) -> bool:
    """Whether ``item`` is data from the world (``DATA_NOTICE`` names these): a tool result,
    summaries, evidence (brought now or recorded with an earlier wake), or a wake that is
    not a person's message (framed ``<wake kind=…>`` by ``framing.wake_text``)."""
    if item.kind == "tool_result" or item.segment in (Segment.SUMMARIES, Segment.EVIDENCE):
        return True
    block = item.block
    return (
        item.role is Role.USER
        and block is not None
        and (is_evidence(block) or item.text.startswith("<wake "))
    )


def with_data_notice(items: list[Item]) -> None:
    """Put the data notice right after the first data in the conversation (after the whole
    run of tool results it opens: providers want a call's results together).

    Where the notice sits depends only on the items before it, so it keeps its place as the
    conversation grows: it appears with new content at the end, and moves only when the
    conversation's opening changes (consolidation, eviction), which rewrites that part of
    the cache anyway.
    """
    n = len(items)
    for i, item in enumerate(items):
        if holds_data(item):
            j = i + 1
            while j < n and items[j].kind == "tool_result":
                j += 1
            last = items[j - 1]
            items.insert(j, Item("notice", Role.USER, DATA_NOTICE, last.segment, None, False))
            return


def reply_order(items: list[Item]) -> list[Item]:
    """Each reply's blocks together, in the order the model wrote them, then the results of
    its calls (in the order of the calls).

    Placement keeps a tool result right after its call (a pair is one unit), which splits
    a reply with several calls, or with text after a call, into pieces. A run of items of
    one reply and the results of its calls is put back together; items of no known reply
    stay where they are.
    """
    out: list[Item] = []
    n, i = len(items), 0
    while i < n:
        key = items[i].reply
        if key is None:
            out.append(items[i])
            i += 1
            continue
        said: list[Item] = []
        results: list[Item] = []
        calls: set[str | None] = set()
        while i < n:
            item = items[i]
            if item.reply == key:
                said.append(item)
                if item.kind == "tool_use" and item.block is not None:
                    calls.add(item.block.tool_call_id)
            elif (
                item.kind == "tool_result"
                and item.block is not None
                and item.block.tool_call_id in calls
            ):
                results.append(item)
            else:
                break
            i += 1
        out.extend(said)
        out.extend(results)
    return out
