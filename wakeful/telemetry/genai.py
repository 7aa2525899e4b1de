"""The GenAI semantic conventions' message shapes, built from a request and a reply."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from wakeful.providers.base import ModelReply

__all__ = ["input_messages", "output_messages", "server_of", "system_instructions"]


def server_of(provider: object) -> tuple[str, int | None]:
    """(host, port) a provider's SDK client talks to, for ``server.address``/``port``;
    ("", None) when it does not say. Both SDKs keep the URL on ``_client.base_url``."""
    base = getattr(getattr(provider, "_client", None), "base_url", None)
    if base is None:
        return "", None
    parts = urlsplit(str(base))
    port = parts.port or {"https": 443, "http": 80}.get(parts.scheme)
    return parts.hostname or "", port


def text_parts(content: Any) -> list[dict[str, Any]]:
    """A message's content as the conventions' parts (text, tool_call, tool_call_response)."""
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    parts: list[dict[str, Any]] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append({"type": "text", "content": block.get("text", "")})
        elif kind == "tool_use":
            parts.append(
                {
                    "type": "tool_call",
                    "id": block.get("id"),
                    "name": block.get("name"),
                    "arguments": block.get("input"),
                }
            )
        elif kind == "tool_result":
            parts.append(
                {
                    "type": "tool_call_response",
                    "id": block.get("tool_use_id"),
                    "result": block.get("content"),
                }
            )
    return parts


def input_messages(request: Mapping[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in request.get("messages") or []:
        if not isinstance(message, Mapping):
            continue
        role = str(message.get("role", "user"))
        parts = text_parts(message.get("content"))
        for call in message.get("tool_calls") or []:  # OpenAI's shape
            fn = call.get("function", {}) if isinstance(call, Mapping) else {}
            parts.append(
                {
                    "type": "tool_call",
                    "id": call.get("id") if isinstance(call, Mapping) else None,
                    "name": fn.get("name"),
                    "arguments": fn.get("arguments"),
                }
            )
        if role == "tool":
            parts = [
                {
                    "type": "tool_call_response",
                    "id": message.get("tool_call_id"),
                    "result": message.get("content"),
                }
            ]
        out.append({"role": role, "parts": parts})
    return out


def system_instructions(request: Mapping[str, Any]) -> list[dict[str, Any]]:
    system = request.get("system")
    if system is None:  # OpenAI's shape: system messages among the messages
        return [
            part
            for m in request.get("messages") or []
            if isinstance(m, Mapping) and m.get("role") in ("system", "developer")
            for part in text_parts(m.get("content"))
        ]
    return text_parts(system)


def output_messages(reply: ModelReply) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for block in reply.content():
        if block.type == "text":
            parts.append({"type": "text", "content": block.text})
        elif block.call is not None:
            parts.append(
                {
                    "type": "tool_call",
                    "id": block.call.id,
                    "name": block.call.name,
                    "arguments": block.call.input,
                }
            )
    return [{"role": "assistant", "parts": parts, "finish_reason": reply.stop_reason}]
