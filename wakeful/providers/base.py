"""The one small protocol every model provider sits behind.

Activities call providers; nothing else does. A provider takes a rendered, provider-ready
request body (exactly what the compiler produced) and returns a normalised reply with the
usage fields named as the provider names them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field


class ToolCall(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    input: dict[str, Any]
    arguments: str = Field(
        default="",
        description="The arguments as the provider spelled them (OpenAI's JSON string; "
        "Anthropic's input as JSON in its key order): what a faithful replay sends back.",
    )


class ReplyBlock(BaseModel):
    """One block of a reply, in the provider's order: text, or a tool call."""

    model_config = ConfigDict(frozen=True)

    type: Literal["text", "tool_use"]
    text: str = ""
    call: ToolCall | None = None


class Usage(BaseModel):
    """Token usage of one call.

    Field names follow the providers: Anthropic's ``cache_creation_input_tokens`` and
    ``cache_read_input_tokens``; OpenAI's ``cached_tokens`` is mapped to
    ``cache_read_input_tokens``. ``input_tokens`` is always the *uncached* input
    (Anthropic's definition); ``total_input_tokens`` adds the cached parts back.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_creation_5m_input_tokens: int = 0
    cache_creation_1h_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    @property
    def total_input_tokens(self) -> int:
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens


class ModelReply(BaseModel):
    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    stop_reason: str
    usage: Usage
    model: str
    provider: str
    raw: dict[str, Any] = Field(default_factory=dict, description="The provider's JSON reply.")
    blocks: list[ReplyBlock] = Field(
        default_factory=list,
        description="Text and tool calls in the order the provider returned them.",
    )

    def content(self) -> list[ReplyBlock]:
        """The reply's blocks in order; for replies stored before ``blocks`` existed, the
        text first, then the calls (as they were recorded then)."""
        if self.blocks:
            return list(self.blocks)
        out = [ReplyBlock(type="text", text=self.text)] if self.text else []
        return out + [ReplyBlock(type="tool_use", call=c) for c in self.tool_calls]


@runtime_checkable
class ModelProvider(Protocol):
    """A model behind its official SDK (or a fake, in tests)."""

    name: str

    async def complete(self, request: dict[str, Any]) -> ModelReply:
        """Send one provider-ready request body; raise ProviderError on failure."""
        ...


class StreamEvent(BaseModel):
    """What a streamed reply has said so far, as it says it: a piece of text, or a tool
    call once its arguments are complete."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["text", "tool_call"]
    text: str = ""
    call: ToolCall | None = None


OnStreamEvent = Callable[[StreamEvent], None]
"""Called with each event as it arrives; it must not block (it hands the event on)."""


@runtime_checkable
class StreamingProvider(ModelProvider, Protocol):
    """A provider that can also stream: the same reply as ``complete``, its text and tool
    calls handed to ``on_event`` as they arrive."""

    async def stream(self, request: dict[str, Any], on_event: OnStreamEvent) -> ModelReply:
        """Send ``request`` with the API's streaming on; raise ProviderError on failure."""
        ...
