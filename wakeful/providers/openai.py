"""OpenAI Chat Completions and Responses through the official SDK.

Works against any OpenAI-compatible ``base_url`` (local servers, the simulator). Clients
are built with ``max_retries=0`` so Temporal owns retries (only a request whose connection
failed before any reply is sent again at once, once: ``SdkProvider``);
:func:`map_openai_error` applies the same retry policy as the Anthropic adapter
(408/409/429/5xx and connection errors retryable, ``retry-after`` honoured; other 4xx not).

Usage is normalised to Anthropic's definitions (see :class:`~wakeful.providers.base.Usage`):
``cached_tokens`` -> ``cache_read_input_tokens``, ``cache_write_tokens`` (models that bill
writes) -> ``cache_creation_input_tokens``, and ``input_tokens`` is the prompt minus both.
Stop reasons use Anthropic's vocabulary too (``end_turn``, ``tool_use``, ``max_tokens``),
so workflows branch on one set of values whichever provider answered.
"""

from __future__ import annotations

import json
from typing import Any

import openai

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

__all__ = [
    "OpenAIChatProvider",
    "OpenAIResponsesProvider",
    "map_openai_error",
    "normalise_finish_reason",
    "usage_from_openai",
]

_FINISH = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def normalise_finish_reason(reason: str | None) -> str:
    return _FINISH.get(reason or "stop", reason or "end_turn")


def map_openai_error(exc: BaseException) -> ProviderError:
    """Translate any SDK failure into a :class:`ProviderError` Temporal can act on."""
    if isinstance(exc, openai.APIStatusError):
        body = exc.body if isinstance(exc.body, dict) else {}
        error = body.get("error", body) if isinstance(body, dict) else {}
        detail = error.get("message") if isinstance(error, dict) else None
        return status_error(
            "openai",
            exc.status_code,
            detail or exc.message,
            request_id=exc.request_id,
            headers=exc.response.headers,
        )
    if isinstance(exc, openai.APIConnectionError):
        return unreachable_error("openai", exc)
    return call_failed_error("openai", exc)


def usage_from_openai(prompt: int, completion: int, details: Any) -> Usage:
    cached = int(getattr(details, "cached_tokens", 0) or 0) if details else 0
    written = int(getattr(details, "cache_write_tokens", 0) or 0) if details else 0
    return Usage(
        input_tokens=max(prompt - cached - written, 0),
        output_tokens=completion,
        cache_creation_input_tokens=written,
        cache_read_input_tokens=cached,
    )


def _arguments(raw: str | None) -> dict[str, Any]:
    try:
        parsed = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return {"_raw": raw}
    return parsed if isinstance(parsed, dict) else {"_value": parsed}


class _OpenAIBase(SdkProvider[openai.AsyncOpenAI]):
    name = "openai"
    client_type = openai.AsyncOpenAI
    sdk_error = openai.OpenAIError
    connection_error = openai.APIConnectionError
    timeout_error = openai.APITimeoutError
    map_error = staticmethod(map_openai_error)


class OpenAIChatProvider(_OpenAIBase):
    """``ModelProvider`` for ``POST /chat/completions`` bodies."""

    async def complete(self, request: dict[str, Any]) -> ModelReply:
        return self._reply(await self.send(self._client.chat.completions.create, request))

    async def stream(self, request: dict[str, Any], on_event: OnStreamEvent) -> ModelReply:
        """Chat Completions streamed (usage asked for with ``stream_options``), its chunks
        put back together as the completion ``complete`` would get."""
        options = {**(request.get("stream_options") or {}), "include_usage": True}
        head: dict[str, Any] = {}
        message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
        calls: dict[int, dict[str, Any]] = {}
        finish: str | None = None
        usage: dict[str, Any] | None = None
        create = self._client.chat.completions.create
        async for chunk in self.events(create, {**request, "stream_options": options}):
            raw = chunk.to_dict()
            for key in ("id", "created", "model", "service_tier", "system_fingerprint"):
                if key in raw:
                    head.setdefault(key, raw[key])
            if chunk.usage is not None:
                usage = chunk.usage.to_dict()
            for choice in chunk.choices:
                delta = choice.delta
                if delta.content:
                    message["content"] = (message["content"] or "") + delta.content
                    on_event(StreamEvent(kind="text", text=delta.content))
                for part in delta.tool_calls or []:
                    call = calls.setdefault(
                        part.index,
                        {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
                    )
                    call["id"] = part.id or call["id"]
                    if part.function is not None:
                        call["function"]["name"] += part.function.name or ""
                        call["function"]["arguments"] += part.function.arguments or ""
                finish = choice.finish_reason or finish
        if calls:
            ordered = [calls[i] for i in sorted(calls)]
            message["tool_calls"] = ordered
            for c in ordered:
                fn = c["function"]
                on_event(
                    StreamEvent(
                        kind="tool_call",
                        call=ToolCall(
                            id=c["id"],
                            name=fn["name"],
                            input=_arguments(fn["arguments"]),
                            arguments=fn["arguments"],
                        ),
                    )
                )
        body: dict[str, Any] = {
            "id": head.get("id", ""),
            "object": "chat.completion",
            "created": head.get("created", 0),
            "model": head.get("model", request.get("model", "")),
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
            ],
            "usage": usage,
            **{k: head[k] for k in ("service_tier", "system_fingerprint") if k in head},
        }
        try:
            return self._reply(openai.types.chat.ChatCompletion.model_validate(body))
        except ValueError as exc:
            raise call_failed_error(self.name, exc) from exc

    def _reply(self, completion: Any) -> ModelReply:
        choice = completion.choices[0]
        calls = [
            ToolCall(
                id=c.id,
                name=c.function.name,
                input=_arguments(c.function.arguments),
                arguments=c.function.arguments or "",
            )
            for c in choice.message.tool_calls or []
            if getattr(c, "type", "function") == "function"
        ]
        text = choice.message.content or ""
        blocks = [ReplyBlock(type="text", text=text)] if text else []
        usage = completion.usage
        return ModelReply(
            text=text,
            tool_calls=calls,
            blocks=blocks + [ReplyBlock(type="tool_use", call=c) for c in calls],
            stop_reason=normalise_finish_reason(choice.finish_reason),
            usage=usage_from_openai(
                usage.prompt_tokens if usage else 0,
                usage.completion_tokens if usage else 0,
                usage.prompt_tokens_details if usage else None,
            ),
            model=completion.model,
            provider=self.name,
            raw=completion.to_dict(),
        )


class OpenAIResponsesProvider(_OpenAIBase):
    """``ModelProvider`` for ``POST /responses`` bodies."""

    async def complete(self, request: dict[str, Any]) -> ModelReply:
        return self._reply(await self.send(self._client.responses.create, request))

    async def stream(self, request: dict[str, Any], on_event: OnStreamEvent) -> ModelReply:
        """The Responses API streamed: text deltas and each function call as it is done
        go to ``on_event``; ``response.completed`` carries the whole response."""
        final: Any = None
        async for event in self.events(self._client.responses.create, request):
            kind = event.type
            if kind == "response.output_text.delta":
                on_event(StreamEvent(kind="text", text=event.delta))
            elif kind == "response.output_item.done" and event.item.type == "function_call":
                item = event.item
                on_event(
                    StreamEvent(
                        kind="tool_call",
                        call=ToolCall(
                            id=item.call_id,
                            name=item.name,
                            input=_arguments(item.arguments),
                            arguments=item.arguments or "",
                        ),
                    )
                )
            elif kind in ("response.completed", "response.incomplete"):
                final = event.response
            elif kind == "response.failed":
                raise ProviderError(
                    f"openai response failed: {event.response.error}", retryable=True
                )
        if final is None:
            raise call_failed_error(self.name, ValueError("the stream ended without a response"))
        return self._reply(final)

    def _reply(self, response: Any) -> ModelReply:
        calls: list[ToolCall] = []
        blocks: list[ReplyBlock] = []
        for item in response.output:
            if item.type == "function_call":
                call = ToolCall(
                    id=item.call_id,
                    name=item.name,
                    input=_arguments(item.arguments),
                    arguments=item.arguments or "",
                )
                calls.append(call)
                blocks.append(ReplyBlock(type="tool_use", call=call))
            elif item.type == "message":
                said = "".join(p.text for p in item.content if p.type == "output_text")
                if said:
                    blocks.append(ReplyBlock(type="text", text=said))
        incomplete = getattr(response.incomplete_details, "reason", None)
        if calls:
            stop = "tool_use"
        elif incomplete == "max_output_tokens":
            stop = "max_tokens"
        else:
            stop = "end_turn"
        usage = response.usage
        return ModelReply(
            text=response.output_text,
            tool_calls=calls,
            blocks=blocks,
            stop_reason=stop,
            usage=usage_from_openai(
                usage.input_tokens if usage else 0,
                usage.output_tokens if usage else 0,
                usage.input_tokens_details if usage else None,
            ),
            model=response.model,
            provider=self.name,
            raw=response.to_dict(),
        )
