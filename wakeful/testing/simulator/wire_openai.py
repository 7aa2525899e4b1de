"""The OpenAI wire formats (Chat Completions and Responses): request view, bodies, errors.

Shapes follow the OpenAI API reference so the official ``openai`` SDK parses them
unmodified. Usage reports ``cached_tokens`` (and ``cache_write_tokens`` where the model
bills writes) under ``prompt_tokens_details`` / ``input_tokens_details``.
"""

from __future__ import annotations

import json
from typing import Any

from wakeful.compiler.canonical import canonical_json
from wakeful.testing.simulator.openai_cache import OpenAICacheResult, writes_billed
from wakeful.testing.simulator.script import Conversation, SimReply
from wakeful.testing.simulator.state import SimError
from wakeful.testing.simulator.tokens import count_tokens, digest

__all__ = [
    "chat_body",
    "chat_conversation",
    "error_body",
    "finish_reason",
    "responses_body",
    "responses_conversation",
    "validate_tool_pairing",
]

_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
}
_ERRORS = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


def finish_reason(stop_reason: str) -> str:
    return _FINISH.get(stop_reason, "stop")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p
        )
    return ""


def _unanswered(pending: list[str]) -> SimError:
    """The API's error for calls whose ids got no tool message, in its wording."""
    return SimError(
        400,
        "An assistant message with 'tool_calls' must be followed by tool messages responding"
        " to each 'tool_call_id'. The following tool_call_ids did not have response messages:"
        f" {', '.join(pending)}",
    )


def validate_tool_pairing(body: dict[str, Any]) -> None:
    """Chat Completions rejects tool messages without a preceding call, and calls whose
    ids get no tool message; so does the simulator, with the API's wording."""
    pending: list[str] = []
    for message in body.get("messages") or []:
        role = message.get("role")
        if role == "tool":
            call_id = str(message.get("tool_call_id"))
            if call_id not in pending:
                raise SimError(
                    400,
                    (
                        "Invalid parameter: messages with role 'tool' must be a response to a "
                        "preceeding message with 'tool_calls'."
                    ),
                )
            pending.remove(call_id)
            continue
        if pending:
            raise _unanswered(pending)
        if role == "assistant":
            pending = [str(c.get("id")) for c in message.get("tool_calls") or []]
    if pending:
        raise _unanswered(pending)


def _with_choice(tools: dict[str, dict[str, Any]], choice: Any) -> Conversation:
    """The view's tools under the request's ``tool_choice``: ``none`` hides them,
    ``required`` asks for a call, a named function for a call of it (the Chat shape nests
    the name under ``function``; the Responses shape does not)."""
    if choice == "none":
        return Conversation()
    forced: str | None = None
    if isinstance(choice, dict) and choice.get("type") == "function":
        fn = choice.get("function")
        name = fn.get("name") if isinstance(fn, dict) else choice.get("name")
        forced = str(name) if name else None
    must = (choice == "required" or forced is not None) and bool(tools)
    return Conversation(tools=tools, must_call=must, forced_tool=forced)


def chat_conversation(body: dict[str, Any]) -> Conversation:
    tools: dict[str, dict[str, Any]] = {}
    for tool in body.get("tools") or []:
        fn = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(fn, dict) and "name" in fn:
            tools[str(fn["name"])] = dict(fn.get("parameters") or {})
    view = _with_choice(tools, body.get("tool_choice"))
    messages = list(body.get("messages") or [])
    trailing: list[str] = []
    while messages and messages[-1].get("role") == "tool":
        trailing.insert(0, _text(messages.pop().get("content")))
    if trailing:
        view.tool_results = trailing
    elif messages and messages[-1].get("role") == "user":
        view.last_user_text = _text(messages[-1].get("content"))
    return view


def responses_conversation(body: dict[str, Any]) -> Conversation:
    tools = {
        str(t["name"]): dict(t.get("parameters") or {})
        for t in body.get("tools") or []
        if isinstance(t, dict) and t.get("type") == "function" and "name" in t
    }
    view = _with_choice(tools, body.get("tool_choice"))
    items = body.get("input")
    if isinstance(items, str):
        view.last_user_text = items
        return view
    items = list(items or [])
    trailing: list[str] = []
    while (
        items and isinstance(items[-1], dict) and items[-1].get("type") == ("function_call_output")
    ):
        output = items.pop().get("output")
        trailing.insert(0, output if isinstance(output, str) else canonical_json(output))
    if trailing:
        view.tool_results = trailing
    elif items and isinstance(items[-1], dict) and items[-1].get("role") == "user":
        view.last_user_text = _text(items[-1].get("content"))
    return view


def _calls(reply: SimReply, seed: str) -> list[tuple[str, str, str]]:
    return [
        ("call_sim_" + digest(seed, str(i)).hex()[:24], name, json.dumps(args, sort_keys=True))
        for i, (name, args) in enumerate(reply.tool_calls)
    ]


def _output_tokens(reply: SimReply, calls: list[tuple[str, str, str]]) -> int:
    return (count_tokens(reply.text) + sum(count_tokens(n + a) for _, n, a in calls)) or 1


def chat_body(
    reply: SimReply, *, model: str, seed: str, created: int, cache: OpenAICacheResult
) -> dict[str, Any]:
    calls = _calls(reply, seed)
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None, "refusal": None}
    if calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
            for cid, name, args in calls
        ]
    output = _output_tokens(reply, calls)
    details: dict[str, Any] = {"cached_tokens": cache.cached_tokens, "audio_tokens": 0}
    if writes_billed(model):
        details["cache_write_tokens"] = cache.cache_write_tokens
    return {
        "id": "chatcmpl-sim" + digest(seed).hex()[:24],
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": finish_reason(reply.stop_reason),
            }
        ],
        "usage": {
            "prompt_tokens": cache.prompt_tokens,
            "completion_tokens": output,
            "total_tokens": cache.prompt_tokens + output,
            "prompt_tokens_details": details,
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
        "service_tier": "default",
        "system_fingerprint": "fp_wakeful_sim",
    }


def responses_body(
    reply: SimReply,
    *,
    body: dict[str, Any],
    seed: str,
    created: int,
    cache: OpenAICacheResult,
) -> dict[str, Any]:
    calls = _calls(reply, seed)
    output: list[dict[str, Any]] = []
    if reply.text:
        output.append(
            {
                "type": "message",
                "id": "msg_sim_" + digest(seed, "m").hex()[:24],
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    for cid, name, args in calls:
        output.append(
            {
                "type": "function_call",
                "id": "fc_sim_" + cid[9:],
                "call_id": cid,
                "name": name,
                "arguments": args,
                "status": "completed",
            }
        )
    out_tokens = _output_tokens(reply, calls)
    truncated = reply.stop_reason == "max_tokens"
    return {
        "id": "resp_sim_" + digest(seed).hex()[:24],
        "object": "response",
        "created_at": created,
        "status": "incomplete" if truncated else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if truncated else None,
        "error": None,
        "model": body.get("model"),
        "instructions": body.get("instructions"),
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "metadata": body.get("metadata") or {},
        "temperature": 1.0,
        "top_p": 1.0,
        "text": {"format": {"type": "text"}},
        "prompt_cache_key": body.get("prompt_cache_key"),
        "prompt_cache_retention": body.get("prompt_cache_retention"),
        "usage": {
            "input_tokens": cache.prompt_tokens,
            "input_tokens_details": {
                "cached_tokens": cache.cached_tokens,
                "cache_write_tokens": cache.cache_write_tokens,
            },
            "output_tokens": out_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": cache.prompt_tokens + out_tokens,
        },
    }


def error_body(status: int, message: str) -> dict[str, Any]:
    kind, code = _ERRORS.get(status, ("server_error", None))
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}
