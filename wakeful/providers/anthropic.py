"""Anthropic Messages API through the official SDK.

The client is built with ``max_retries=0``: Temporal owns retries, so every attempt is
visible in workflow history and backoff is not stacked (only a request whose connection
failed before any reply is sent again at once, once: ``SdkProvider``). Failures leave
through one function, :func:`map_anthropic_error`, which decides retryability:

* retryable: 408, 409, 429, every 5xx (529 "overloaded" included), connection errors and
  timeouts; ``retry-after`` / ``retry-after-ms`` become ``retry_after`` seconds;
* non-retryable: 400, 401, 403, 404, 413 and any other 4xx, malformed replies.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic

from wakeful.errors import ProviderError
from wakeful.providers._sdk import (
    SdkProvider,
    call_failed_error,
    status_error,
    unreachable_error,
)
from wakeful.providers.base import (
    ModelReply,
    OnStreamEvent,
    ReplyBlock,
    StreamEvent,
    ToolCall,
    Usage,
)

__all__ = ["AnthropicProvider", "map_anthropic_error", "usage_from_anthropic"]


def map_anthropic_error(exc: BaseException) -> ProviderError:
    """Translate any SDK failure into a :class:`ProviderError` Temporal can act on."""
    if isinstance(exc, anthropic.APIStatusError):
        return status_error(
            "anthropic",
            exc.status_code,
            getattr(exc, "api_message", None) or str(exc),
            kind=getattr(exc, "type", None) or "error",
            request_id=exc.request_id,
            headers=exc.response.headers,
        )
    if isinstance(exc, anthropic.APIConnectionError):
        return unreachable_error("anthropic", exc)
    return call_failed_error("anthropic", exc)


def usage_from_anthropic(usage: Any) -> Usage:
    """Anthropic names are Wakeful's names; only the 5m/1h split needs unpacking."""
    creation = getattr(usage, "cache_creation", None)
    total_creation = int(getattr(usage, "cache_creation_input_tokens", 0) or 0)
    five = int(getattr(creation, "ephemeral_5m_input_tokens", 0) or 0) if creation else 0
    hour = int(getattr(creation, "ephemeral_1h_input_tokens", 0) or 0) if creation else 0
    if creation is None:
        five = total_creation  # older replies without the split: 5m is the default TTL
    return Usage(
        input_tokens=int(usage.input_tokens or 0),
        output_tokens=int(usage.output_tokens or 0),
        cache_creation_input_tokens=total_creation,
        cache_creation_5m_input_tokens=five,
        cache_creation_1h_input_tokens=hour,
        cache_read_input_tokens=int(getattr(usage, "cache_read_input_tokens", 0) or 0),
    )


class AnthropicProvider(SdkProvider[anthropic.AsyncAnthropic]):
    """``ModelProvider`` for the Messages API (or anything speaking it, e.g. the simulator)."""

    name = "anthropic"
    client_type = anthropic.AsyncAnthropic
    sdk_error = anthropic.AnthropicError
    connection_error = anthropic.APIConnectionError
    timeout_error = anthropic.APITimeoutError
    map_error = staticmethod(map_anthropic_error)

    async def complete(self, request: dict[str, Any]) -> ModelReply:
        return self._reply(await self.send(self._client.messages.create, request))

    async def stream(self, request: dict[str, Any], on_event: OnStreamEvent) -> ModelReply:
        """The Messages API's stream, put back together as the message ``complete`` would
        get: the ``message_start`` message, each block as it opened, filled by its deltas
        (a tool call's input is its concatenated JSON), the stop reason and usage of
        ``message_delta``."""
        message: dict[str, Any] = {}
        partial: dict[int, list[str]] = {}
        async for event in self.events(self._client.messages.create, request):
            kind = event.type
            if kind == "message_start":
                message = event.message.to_dict()
                message["content"] = []
            elif kind == "content_block_start":
                message["content"].append(event.content_block.to_dict())
            elif kind == "content_block_delta":
                block, delta = message["content"][event.index], event.delta
                if delta.type == "text_delta":
                    block["text"] = block.get("text", "") + delta.text
                    on_event(StreamEvent(kind="text", text=delta.text))
                elif delta.type == "input_json_delta":
                    partial.setdefault(event.index, []).append(delta.partial_json)
            elif kind == "content_block_stop":
                block = message["content"][event.index]
                if block.get("type") == "tool_use":
                    raw = "".join(partial.pop(event.index, []))
                    block["input"] = json.loads(raw) if raw else {}
                    on_event(
                        StreamEvent(
                            kind="tool_call",
                            call=ToolCall(
                                id=block["id"],
                                name=block["name"],
                                input=block["input"],
                                arguments=json.dumps(block["input"], ensure_ascii=False),
                            ),
                        )
                    )
            elif kind == "message_delta":
                message["stop_reason"] = event.delta.stop_reason
                message["stop_sequence"] = event.delta.stop_sequence
                # Its counts are totals so far: they replace message_start's (None: unsaid).
                said = {k: v for k, v in event.usage.to_dict().items() if v is not None}
                message.setdefault("usage", {}).update(said)
        try:
            return self._reply(anthropic.types.Message.model_validate(message))
        except ValueError as exc:
            raise call_failed_error(self.name, exc) from exc

    def _reply(self, message: Any) -> ModelReply:
        text: list[str] = []
        calls: list[ToolCall] = []
        blocks: list[ReplyBlock] = []
        for block in message.content:
            if block.type == "text":
                text.append(block.text)
                blocks.append(ReplyBlock(type="text", text=block.text))
            elif block.type == "tool_use":
                args = dict(block.input)
                call = ToolCall(
                    id=block.id,
                    name=block.name,
                    input=args,
                    arguments=json.dumps(args, ensure_ascii=False),
                )
                calls.append(call)
                blocks.append(ReplyBlock(type="tool_use", call=call))
        return ModelReply(
            text="".join(text),
            tool_calls=calls,
            blocks=blocks,
            stop_reason=str(message.stop_reason or "end_turn"),
            usage=usage_from_anthropic(message.usage),
            model=message.model,
            provider=self.name,
            raw=message.to_dict(),
        )
