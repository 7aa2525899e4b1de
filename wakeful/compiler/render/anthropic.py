"""Anthropic Messages: tools → system → messages, with up to four cache breakpoints.

Layout::

    tools[...]                                   stable
    system[0]  instructions + data notice + rules   ← breakpoint "stable" (cache.stable_ttl, 1h)
    system[1]  skills index, task frame, decisions, handoff   ← "semi_stable"
    messages:  user[summaries] ← "summaries",
               history of earlier wakes… ← "history",
               current wake… ← "rolling", user[evidence it brings] (not cached)

Messages alternate roles: consecutive same-role items go into one message. Each model
reply is one assistant message, holding exactly the blocks the provider returned (text and
``tool_use`` in order, never merged: ``compiler.replies``); two replies share one only when
the budget evicted everything between them, as the API would join them anyway. The results
of a reply's calls open the user message right after it, so no tool_use is ever left
without its result. The last message is always the user's.

The ``history`` breakpoint is what the next wake reads: the history before it is the same
bytes plus the wake that just ended, its evidence included.

The 20-block lookback: the provider finds an earlier cache entry only within ~20 content
blocks before a breakpoint. Summaries and evidence are one content block each and history
text merges, but tool traffic cannot merge. Two **bridges** reach entries beyond it:

* ``bridge`` — more than ``cache.lookback_blocks`` content blocks separate the rolling
  breakpoint from the one before it: a breakpoint on the end of the user message before the
  final assistant turn, exactly where the previous call of this wake put its rolling one.
* ``wake_bridge`` — the last wake in the history has that many content blocks or more: a
  breakpoint on the end of the wakes before it, where that wake's calls put ``history``.

``cleared`` — on the last tool result that clearing replaced by a note, so the next
clearing step reads the history up to there (``compiler.clearing``).

At most four breakpoints: when more are wanted, ``summaries`` gives way first, then
``semi_stable`` (the history entry's prefix contains both), ``cleared`` (it pays only at
the next clearing step), ``wake_bridge``.
TTLs never increase along the prompt, as the provider requires (policy validation enforces
it). A segment whose TTL is ``"none"`` gets no ``cache_control``: its marks stay checkpoints
(``explicit=False``) and the call writes nothing past the last breakpoint before them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

from wakeful.compiler.blocks import CLEARED_END_META, Block, Segment
from wakeful.compiler.place import Layout
from wakeful.compiler.render.base import ROLE, Item, Mark, Rendered, Renderer

MAX_BREAKPOINTS = 4
NO_TTL = "none"  # a segment TTL that writes no cache entry (policy.Ttl)


class AnthropicRenderer(Renderer):
    provider: ClassVar[str] = "anthropic"

    def tool(self, block: Block) -> dict[str, Any]:
        schema = self.tool_schema(block)
        return {"name": self.tool_name(block), "description": block.text, "input_schema": schema}

    def content(self, item: Item) -> dict[str, Any]:
        block = item.block
        if item.kind == "tool_use" and block is not None:
            return {
                "type": "tool_use",
                "id": block.tool_call_id,
                "name": self.tool_name(block),
                "input": block.tool_input or {},
            }
        if item.kind == "tool_result" and block is not None:
            out: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": block.tool_call_id,
                "content": item.text,
            }
            if block.is_error:
                out["is_error"] = True
            return out
        return {"type": "text", "text": item.text}

    def messages(self, items: list[Item]) -> tuple[list[dict[str, Any]], list[tuple[int, Item]]]:
        """Merge items into alternating messages; return them and (message, item) per block."""
        messages: list[dict[str, Any]] = []
        where: list[tuple[int, Item]] = []
        for item in items:
            prev = where[-1][1] if where else None
            # Same role, same message. Two replies meet only when the budget evicted what
            # separated them, and the API would join the two turns anyway; otherwise a user
            # message always does, and each reply is one message, as it was received.
            if prev is not None and prev.role is item.role:
                content = messages[-1]["content"]
                if (
                    item.kind == "text"
                    and prev.kind == "text"
                    and item.mergeable
                    and prev.mergeable
                    and item.segment is prev.segment
                ):
                    content[-1]["text"] += "\n\n" + item.text
                    where[-1] = (where[-1][0], item)
                    continue
                content.append(self.content(item))
            else:
                messages.append({"role": ROLE[item.role], "content": [self.content(item)]})
            where.append((len(messages) - 1, item))
        return messages, where

    @staticmethod
    def _earlier_wake_end(where: list[tuple[int, Item]], base: int, history: int) -> int:
        """The element ending the history of wakes before the last one in ``recent``: where
        the previous wake's calls put their ``history`` breakpoint (-1 if none)."""
        last = where[history - base][1].block
        wake = last.wake_id if last is not None else None
        for n in range(history - base - 1, -1, -1):
            item = where[n][1]
            if item.segment is not Segment.RECENT:
                return -1
            if item.block is not None and item.block.wake_id != wake:
                return base + n
        return -1

    def render(self, layout: Layout) -> Rendered:
        cache = layout.policy.cache
        tools = [self.tool(p.block) for p in layout.tools]
        system = [{"type": "text", "text": self.stable_text(layout)}]
        semi = self.semi_stable_text(layout)
        if semi:
            system.append({"type": "text", "text": semi})
        messages, where = self.messages(self.conversation(layout))

        targets: list[dict[str, Any]] = [*tools, *system]
        labels = ["tool"] * len(tools) + ["system"] * len(system)
        paths = [f"/tools/{n}" for n in range(len(tools))] + [
            f"/system/{n}" for n in range(len(system))
        ]
        owners = [p.block.id for p in layout.tools]
        owners.append(layout.system[-1].block.id if layout.system else "")
        if semi:
            owners.append(layout.semi_stable[-1].block.id)
        slots: list[tuple[Any, Any]] = [(tools, n) for n in range(len(tools))]
        slots += [(system, n) for n in range(len(system))]
        last_of_message: dict[int, int] = {}
        for mi, message in enumerate(messages):
            content = message["content"]
            label = f"{message['role']}@{mi}"
            for ci, block in enumerate(content):
                targets.append(block)
                labels.append(label)
                paths.append(f"/messages/{mi}/content/{ci}")
                slots.append((content, ci))
        for n, (mi, item) in enumerate(where):
            owners.append(item.block.id if item.block is not None else "")
            last_of_message[mi] = len(tools) + len(system) + n
        encode = layout.encode
        elements = [encode([label, t]) for label, t in zip(labels, targets, strict=True)]

        marks = [Mark("stable", len(tools), owners[len(tools)], cache.stable_ttl, True)]
        if semi:
            marks.append(
                Mark(
                    "semi_stable",
                    len(tools) + 1,
                    owners[len(tools) + 1],
                    cache.semi_stable_ttl,
                    True,
                )
            )
        base = len(tools) + len(system)
        history = earlier = -1
        for n, (_, item) in enumerate(where):
            if item.segment is Segment.SUMMARIES:
                el = base + n
                marks.append(Mark("summaries", el, owners[el], cache.summaries_ttl, True))
            elif item.segment is Segment.RECENT:
                history = base + n
        if history >= 0:
            earlier = self._earlier_wake_end(where, base, history)
            # An entry ``d`` blocks back is found only if d < lookback (cache_limits).
            if earlier >= 0 and history - earlier >= cache.lookback_blocks:
                marks.append(Mark("wake_bridge", earlier, owners[earlier], cache.rolling_ttl, True))
            marks.append(Mark("history", history, owners[history], cache.rolling_ttl, True))
        cleared = next(
            (
                base + n
                for n, (_, item) in enumerate(where)
                if item.block is not None and CLEARED_END_META in item.block.meta
            ),
            -1,
        )
        if 0 <= cleared < history:
            mark = Mark("cleared", cleared, owners[cleared], cache.rolling_ttl, True)
            marks.append(mark)
            marks.sort(key=lambda m: m.element)
        # The evidence a wake's first call brings is for this wake alone: it goes after the
        # cached prefix, sent as input, not written to the cache. A later call of the wake
        # sends it as a recorded turn, inside the prefix it writes; a later wake that does
        # not carry it (``compiler.evidence``) reads the prefix up to the wake's content.
        rolling = len(elements) - 1 - (1 if layout.evidence else 0)
        if rolling - marks[-1].element > cache.lookback_blocks and len(messages) >= 3:
            bridge = last_of_message[len(messages) - 3]
            if bridge > marks[-1].element:
                marks.append(Mark("bridge", bridge, owners[bridge], cache.rolling_ttl, True))
        if rolling > marks[-1].element:
            marks.append(Mark("rolling", rolling, owners[rolling], cache.rolling_ttl, True))
        marks = _at_most(marks, MAX_BREAKPOINTS)
        # A segment whose TTL is "none" keeps its mark as a checkpoint (the same marks as a
        # call that writes them, so ledgers diff alike): no entry is written there.
        marks = [m if m.ttl != NO_TTL else replace(m, explicit=False) for m in marks]
        for mark in marks:
            if mark.explicit:
                targets[mark.element]["cache_control"] = {"type": "ephemeral", "ttl": mark.ttl}

        request: dict[str, Any] = {
            "model": layout.agent.model,
            "max_tokens": layout.policy.budget.output_reserve,
            "system": system,
            "messages": messages,
        }
        if tools:
            request["tools"] = tools
            if layout.agent.tool_choice == "any":
                request["tool_choice"] = {"type": "any"}
        return Rendered(
            request=request,
            stable={"tools": tools, "system": system[0]},
            semi_stable=system[1] if semi else None,
            elements=elements,
            element_blocks=owners,
            paths=paths,
            marks=marks,
            spliceable=type(self).render is AnthropicRenderer.render,
            slots=slots,
        )


# Which breakpoints give way when more than four are wanted, first to last. Stable and
# rolling never do; the history entry subsumes the summaries and semi-stable ones whenever
# the history is unchanged, and bridges only matter past the lookback window.
_DROP_ORDER = ("summaries", "semi_stable", "cleared", "wake_bridge", "history", "bridge")


def _at_most(marks: list[Mark], limit: int) -> list[Mark]:
    for name in _DROP_ORDER:
        if len(marks) <= limit:
            break
        marks = [m for m in marks if m.name != name]
    return marks
