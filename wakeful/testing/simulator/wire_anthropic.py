"""The Anthropic Messages wire format: request view, reply body, error body.

Field names and shapes follow the Messages API reference so the official ``anthropic`` SDK
parses them unmodified.
"""

from __future__ import annotations

from typing import Any

from wakeful.compiler.framing import DATA_NOTICE
from wakeful.testing.simulator.anthropic_cache import AnthropicCacheResult
from wakeful.testing.simulator.script import Conversation, SimReply
from wakeful.testing.simulator.state import SimError
from wakeful.testing.simulator.tokens import block_text, count_tokens, digest

__all__ = ["conversation", "error_body", "message_body", "validate_tool_pairing"]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", ""))
            if isinstance(b, dict) and b.get("type") == "text"
            else block_text(b)
            for b in content
        )
    return ""


def _ids(content: Any, kind: str, key: str) -> list[str]:
    if not isinstance(content, list):
        return []
    return [str(b.get(key)) for b in content if isinstance(b, dict) and b.get("type") == kind]


def validate_tool_pairing(body: dict[str, Any]) -> None:
    """Reject split tool traffic as the API does: every ``tool_use`` needs its
    ``tool_result`` in the very next message, and no result may lack its call."""
    messages = body.get("messages") or []
    for m, message in enumerate(messages):
        content = message.get("content")
        if message.get("role") == "user":
            previous = messages[m - 1].get("content") if m else None
            uses = set(_ids(previous, "tool_use", "id")) if m else set()
            for c, block in enumerate(content if isinstance(content, list) else []):
                if (
                    isinstance(block, dict)
                    and block.get("type") == "tool_result"
                    and (str(block.get("tool_use_id")) not in uses)
                ):
                    raise SimError(
                        400,
                        (
                            f"messages.{m}.content.{c}: unexpected `tool_use_id` found in "
                            f"`tool_result` blocks: {block.get('tool_use_id')}. Each "
                            "`tool_result` block must have a corresponding `tool_use` block in "
                            "the previous message."
                        ),
                    )
        if message.get("role") != "assistant":
            continue
        uses_here = _ids(content, "tool_use", "id")
        following = messages[m + 1].get("content") if m + 1 < len(messages) else None
        answered = set(_ids(following, "tool_result", "tool_use_id"))
        missing = [u for u in uses_here if u not in answered]
        if missing and m + 1 < len(messages):
            raise SimError(
                400,
                (
                    f"messages.{m}: `tool_use` ids were found without `tool_result` blocks "
                    f"immediately after: {', '.join(missing)}. Each `tool_use` block must have a "
                    "corresponding `tool_result` block in the next message."
                ),
            )


def _is_data(text: str) -> bool:
    """Text the compiler sends beside tool results that asks nothing: the data notice, and
    framed evidence, summaries and notes."""
    return text == DATA_NOTICE or text.lstrip().startswith(
        ("<evidence", "<summary", "<handoff_note")
    )


def conversation(body: dict[str, Any]) -> Conversation:
    tools = {
        str(t["name"]): dict(t.get("input_schema") or {})
        for t in body.get("tools") or []
        if isinstance(t, dict) and "name" in t
    }
    choice = body.get("tool_choice")
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind == "none":
        tools = {}
    view = Conversation(
        tools=tools,
        must_call=kind in ("any", "tool") and bool(tools),
        forced_tool=str(choice["name"]) if kind == "tool" and isinstance(choice, dict) else None,
    )
    messages = body.get("messages") or []
    if not messages:
        return view
    last = messages[-1]
    content = last.get("content")
    if last.get("role") == "user" and isinstance(content, list):
        blocks = [b for b in content if isinstance(b, dict)]
        results = [b for b in blocks if b.get("type") == "tool_result"]
        texts = [b for b in blocks if b.get("type") == "text"]
        view.last_user_text = _text_of(texts)
        # The results of an earlier wake's last call share the message of the next wake's
        # ask (a wake that ended in a tool call, the answer tool's): that ask is answered.
        after = blocks[blocks.index(results[-1]) + 1 :] if results else []
        asks = [b for b in after if b.get("type") == "text" and not _is_data(_text_of([b]))]
        if asks:
            view.last_user_text = _text_of(asks)
        else:
            view.tool_results = [_text_of(b.get("content", "")) for b in results]
    elif last.get("role") == "user":
        view.last_user_text = _text_of(content)
    return view


def message_body(
    reply: SimReply, *, model: str, seed: str, cache: AnthropicCacheResult
) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for i, (name, args) in enumerate(reply.tool_calls):
        tool_id = "toolu_sim_" + digest(seed, str(i)).hex()[:24]
        content.append({"type": "tool_use", "id": tool_id, "name": name, "input": args})
    output_tokens = sum(count_tokens(block_text(b)) for b in content) or 1
    return {
        "id": "msg_sim_" + digest(seed).hex()[:24],
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": reply.stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": cache.input_tokens,
            "cache_creation_input_tokens": cache.cache_creation_input_tokens,
            "cache_read_input_tokens": cache.cache_read_input_tokens,
            "cache_creation": {
                "ephemeral_5m_input_tokens": cache.cache_creation_5m,
                "ephemeral_1h_input_tokens": cache.cache_creation_1h,
            },
            "output_tokens": output_tokens,
            "service_tier": "standard",
        },
    }


def error_body(status: int, message: str, request_id: str) -> dict[str, Any]:
    kind = _ERROR_TYPES.get(status, "api_error")
    return {
        "type": "error",
        "error": {"type": kind, "message": message},
        "request_id": request_id,
    }
