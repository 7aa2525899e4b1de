"""OpenAI Chat Completions and Responses through the official SDK.

Works against any OpenAI-compatible ``base_url`` (local servers, the simulator). Clients
are built with ``max_retries=0`` so Temporal owns retries; :func:`map_openai_error` applies
the same retry policy as the Anthropic adapter (408/409/429/5xx and connection errors
retryable, ``retry-after`` honoured; other 4xx not).

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
from wakeful.providers.base import ModelReply, ReplyBlock, ToolCall, Usage

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
    map_error = staticmethod(map_openai_error)


class OpenAIChatProvider(_OpenAIBase):
    """``ModelProvider`` for ``POST /chat/completions`` bodies."""

    async def complete(self, request: dict[str, Any]) -> ModelReply:
        completion = await self.send(self._client.chat.completions.create, request)
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
        response = await self.send(self._client.responses.create, request)
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
