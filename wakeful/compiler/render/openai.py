"""OpenAI Chat Completions and Responses.

OpenAI caches prompt prefixes automatically, so there are no markers to place: what matters
is that static content comes first and that ``prompt_cache_key`` routes every call of one
agent to the same cache. The key is derived from tenant, agent name and the stable-prefix
hash: stable per agent, and it moves exactly when the cached prefix could no longer match.

Chat: ``system`` (stable) → ``system`` (semi-stable) → ``user`` summaries → history →
current wake → ``user`` evidence it brings; tool calls are ``tool_calls`` on the assistant message,
each answered by a ``role: tool`` message right after it. Responses: ``instructions`` holds
the stable text, the semi-stable text is the first ``developer`` input item, and tool
traffic is ``function_call`` / ``function_call_output`` items.

Marks here are checkpoints (``explicit=False``): they name segment ends so ledgers can say
up to where two compiles share a prefix, but nothing is added to the request.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar

from wakeful.compiler.blocks import Block, Role, Segment, content_hash
from wakeful.compiler.place import Layout
from wakeful.compiler.render.base import ROLE, Item, Mark, Rendered, Renderer


def prompt_cache_key(layout: Layout, stable: Any) -> str:
    agent = layout.agent
    return "wk-" + content_hash(agent.tenant, agent.name, content_hash(layout.encode(stable)))


class _OpenAIBase(Renderer):
    """Chat and Responses lay a request out alike: tools, the stable instructions, the
    semi-stable text as a ``system_role`` message, then the conversation. A subclass says
    where each goes (the ClassVars below) and spells the conversation (``wire_items``)."""

    system_role: ClassVar[str] = "system"
    # The request field that lists the messages (input items); the name of the stable
    # instructions in the value ``prompt_cache_key`` hashes; the field capping the reply.
    conversation_field: ClassVar[str]
    stable_name: ClassVar[str]
    max_tokens_field: ClassVar[str]

    @abstractmethod
    def tool(self, block: Block) -> dict[str, Any]: ...

    @abstractmethod
    def stable_entry(self, layout: Layout) -> tuple[Any, str]:
        """The stable instructions as the request carries them, and the request field they
        go in (``conversation_field`` when they are its first entry)."""

    @abstractmethod
    def wire_items(self, items: list[Item]) -> list[tuple[dict[str, Any], Item]]:
        """The conversation in the provider's syntax, each entry with its last item."""

    def arguments(self, item: Item) -> str:
        """A ``tool_use`` item's arguments: as the model wrote them (``compiler.replies``)."""
        return item.text

    def result_text(self, item: Item) -> str:
        block = item.block
        return f"[error] {item.text}" if block is not None and block.is_error else item.text

    def _finish(
        self,
        layout: Layout,
        tools: list[dict[str, Any]],
        stable: Any,
        semi: Any,
        entries: list[tuple[Any, str, Item | None]],
        fixed: int,
    ) -> tuple[list[str], list[str], list[str], list[Mark]]:
        """Elements, owners and checkpoints over ``tools + entries`` (``fixed`` leading
        entries are the stable and semi-stable ones)."""
        encode = layout.encode
        elements = [encode(["tool", t]) for t in tools]
        owners = [p.block.id for p in layout.tools]
        paths = [f"/tools/{n}" for n in range(len(tools))]
        counters: dict[str, int] = {}
        for value, label, item in entries:
            elements.append(encode([label, value]))
            n = counters[label] = counters.get(label, -1) + 1
            paths.append(f"/{label}/{n}" if label == self.conversation_field else f"/{label}")
            owners.append(item.block.id if item is not None and item.block is not None else "")
        owners[len(tools)] = layout.system[-1].block.id if layout.system else ""
        marks = [Mark("stable", len(tools), owners[len(tools)], None, False)]
        if semi is not None:
            owners[len(tools) + 1] = layout.semi_stable[-1].block.id
            marks.append(Mark("semi_stable", len(tools) + 1, owners[len(tools) + 1], None, False))
        for n, (_, _, item) in enumerate(entries[fixed:]):
            if item is not None and item.segment is Segment.SUMMARIES:
                el = len(tools) + fixed + n
                marks.append(Mark("summaries", el, owners[el], None, False))
        last = len(elements) - 1
        if last > marks[-1].element:
            marks.append(Mark("rolling", last, owners[last], None, False))
        return elements, owners, paths, marks

    def render(self, layout: Layout) -> Rendered:
        tools = [self.tool(p.block) for p in layout.tools]
        head, head_field = self.stable_entry(layout)
        listed = self.conversation_field
        semi_text = self.semi_stable_text(layout)
        semi_msg = {"role": self.system_role, "content": semi_text} if semi_text else None
        fixed: list[tuple[Any, str, Item | None]] = [(head, head_field, None)]
        if semi_msg is not None:
            fixed.append((semi_msg, listed, None))
        convo: list[tuple[Any, str, Item | None]] = [
            (m, listed, item) for m, item in self.wire_items(self.conversation(layout))
        ]
        entries = fixed + convo
        stable = {"tools": tools, self.stable_name: head}
        elements, owners, paths, marks = self._finish(
            layout, tools, stable, semi_msg, entries, len(fixed)
        )
        # An entry of the conversation field is an element of its list; an entry of any
        # other field (Responses' instructions) is that field's whole value.
        request: dict[str, Any] = {"model": layout.agent.model}
        request.update((field, value) for value, field, _ in entries if field != listed)
        request[listed] = [value for value, field, _ in entries if field == listed]
        request["prompt_cache_key"] = prompt_cache_key(layout, stable)
        request[self.max_tokens_field] = layout.policy.budget.output_reserve
        if tools:
            request["tools"] = tools
            if layout.agent.tool_choice == "any":
                request["tool_choice"] = "required"
        spliceable = type(self).render is _OpenAIBase.render
        slots: list[tuple[Any, Any]] = [(tools, n) for n in range(len(tools))]
        at = 0
        for _, field, _ in entries:
            if field == listed:
                slots.append((request[listed], at))
                at += 1
            else:
                slots.append((request, field))
        return Rendered(
            request, stable, semi_msg, elements, owners, paths, marks, spliceable, slots
        )


def _same_reply(prev: tuple[dict[str, Any], Item], item: Item) -> bool:
    """True when ``prev`` is an assistant message of the reply ``item`` belongs to (or both
    belong to no known reply)."""
    return (
        prev[0]["role"] == "assistant"
        and prev[1].role is Role.ASSISTANT
        and prev[1].reply == item.reply
    )


def _add_text(out: list[tuple[dict[str, Any], Item]], item: Item) -> None:
    """Add a text item that is not the model's: joined to the message before it when both
    may merge (history) and that one is text of the same role and segment, else a message
    of its own."""
    prev = out[-1] if out else None
    if (
        prev is not None
        and prev[0].get("role") == ROLE[item.role]
        and "tool_calls" not in prev[0]
        and prev[1].mergeable
        and item.mergeable
        and prev[1].segment is item.segment
    ):
        prev[0]["content"] += "\n\n" + item.text
        out[-1] = (prev[0], item)
    else:
        out.append(({"role": ROLE[item.role], "content": item.text}, item))


class OpenAIChatRenderer(_OpenAIBase):
    provider: ClassVar[str] = "openai_chat"
    conversation_field: ClassVar[str] = "messages"
    stable_name: ClassVar[str] = "system"
    max_tokens_field: ClassVar[str] = "max_completion_tokens"

    def stable_entry(self, layout: Layout) -> tuple[Any, str]:
        return {"role": self.system_role, "content": self.stable_text(layout)}, "messages"

    def wire_items(self, items: list[Item]) -> list[tuple[dict[str, Any], Item]]:
        return self.messages(items)

    def tool(self, block: Block) -> dict[str, Any]:
        schema = self.tool_schema(block)
        return {
            "type": "function",
            "function": {
                "name": self.tool_name(block),
                "description": block.text,
                "parameters": schema,
            },
        }

    def messages(self, items: list[Item]) -> list[tuple[dict[str, Any], Item]]:
        out: list[tuple[dict[str, Any], Item]] = []
        for item in items:
            prev = out[-1] if out else None
            if item.kind == "tool_result" and item.block is not None:
                msg = {
                    "role": "tool",
                    "tool_call_id": item.block.tool_call_id,
                    "content": self.result_text(item),
                }
                out.append((msg, item))
                continue
            if item.kind == "tool_use" and item.block is not None:
                call = {
                    "id": item.block.tool_call_id,
                    "type": "function",
                    "function": {
                        "name": self.tool_name(item.block),
                        "arguments": self.arguments(item),
                    },
                }
                if (
                    prev is not None
                    and _same_reply(prev, item)
                    and (item.reply is not None or prev[1].kind == "text")
                ):
                    prev[0].setdefault("tool_calls", []).append(call)
                    out[-1] = (prev[0], item)
                else:
                    out.append(({"role": "assistant", "content": None, "tool_calls": [call]}, item))
                continue
            if item.kind == "notice":  # guidance, not a person's words
                out.append(({"role": self.system_role, "content": item.text}, item))
                continue
            if item.role is Role.ASSISTANT:
                if prev is not None and item.reply is not None and _same_reply(prev, item):
                    # more text of the same reply (from a provider that allows text after a
                    # call): a Chat message has one content string
                    prev[0]["content"] = (prev[0]["content"] or "") + item.text
                    out[-1] = (prev[0], item)
                else:
                    out.append(({"role": "assistant", "content": item.text}, item))
                continue
            _add_text(out, item)
        return out


class OpenAIResponsesRenderer(_OpenAIBase):
    provider: ClassVar[str] = "openai_responses"
    system_role: ClassVar[str] = "developer"
    conversation_field: ClassVar[str] = "input"
    stable_name: ClassVar[str] = "instructions"
    max_tokens_field: ClassVar[str] = "max_output_tokens"

    def stable_entry(self, layout: Layout) -> tuple[Any, str]:
        return self.stable_text(layout), "instructions"

    def wire_items(self, items: list[Item]) -> list[tuple[dict[str, Any], Item]]:
        return self.input_items(items)

    def tool(self, block: Block) -> dict[str, Any]:
        schema = self.tool_schema(block)
        return {
            "type": "function",
            "name": self.tool_name(block),
            "description": block.text,
            "parameters": schema,
            "strict": False,
        }

    def input_items(self, items: list[Item]) -> list[tuple[dict[str, Any], Item]]:
        out: list[tuple[dict[str, Any], Item]] = []
        for item in items:
            block = item.block
            if item.kind == "tool_use" and block is not None:
                out.append(
                    (
                        {
                            "type": "function_call",
                            "call_id": block.tool_call_id,
                            "name": self.tool_name(block),
                            "arguments": self.arguments(item),
                        },
                        item,
                    )
                )
                continue
            if item.kind == "tool_result" and block is not None:
                out.append(
                    (
                        {
                            "type": "function_call_output",
                            "call_id": block.tool_call_id,
                            "output": self.result_text(item),
                        },
                        item,
                    )
                )
                continue
            if item.kind == "notice":  # guidance, not a person's words
                out.append(({"role": self.system_role, "content": item.text}, item))
                continue
            _add_text(out, item)
        return out
