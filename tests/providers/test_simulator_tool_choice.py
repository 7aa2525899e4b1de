"""The simulator's planner honours ``tool_choice`` in every wire format, as the providers
do: a required call is made (the named tool, else the answer tool, with arguments its
schema accepts), ``none`` calls nothing; and an ask that shares its message with an
earlier wake's last tool results is answered, not the results."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, TypeAdapter

from wakeful.compiler.framing import DATA_NOTICE
from wakeful.testing.simulator import ManualClock, Simulator
from wakeful.typed_tools import output_tool


class Verdict(BaseModel):
    service: str
    severity: str
    page_someone: bool
    tags: list[str]


ANSWER_SCHEMA = output_tool(Verdict).input_schema
LOOKUP = {"type": "object", "properties": {"service": {"type": "string"}}, "required": ["service"]}
KEY = {"x-api-key": "choice"}


def _anthropic(text: str, choice: dict[str, Any] | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": text}],
        "tools": [
            {"name": "final_result", "description": "answer", "input_schema": ANSWER_SCHEMA},
            {"name": "lookup", "description": "look up", "input_schema": LOOKUP},
        ],
    }
    if choice is not None:
        body["tool_choice"] = choice
    return body


def _calls(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(b["name"], b["input"]) for b in body["content"] if b["type"] == "tool_use"]


def test_anthropic_any_calls_the_answer_tool_with_a_valid_value() -> None:
    sim = Simulator(clock=ManualClock())
    status, body, _ = sim.anthropic_messages(KEY, _anthropic("how bad is it?", {"type": "any"}))
    assert status == 200 and body["stop_reason"] == "tool_use"
    ((name, args),) = _calls(body)
    assert name == "final_result"
    verdict = TypeAdapter(Verdict).validate_python(args)
    assert verdict.page_someone is False and verdict.tags == []
    # without tool_choice the same ask is echoed, as before
    _, plain, _ = sim.anthropic_messages(KEY, _anthropic("how bad is it?", None))
    assert _calls(plain) == [] and plain["content"][0]["text"] == "You said: how bad is it?"


def test_anthropic_named_tool_and_none() -> None:
    sim = Simulator(clock=ManualClock())
    forced = _anthropic("check service=billing", {"type": "tool", "name": "lookup"})
    _, body, _ = sim.anthropic_messages(KEY, forced)
    assert _calls(body) == [("lookup", {"service": "billing"})]
    _, body, _ = sim.anthropic_messages(KEY, _anthropic("lookup service=x", {"type": "none"}))
    assert _calls(body) == [] and body["stop_reason"] == "end_turn"


def _chat_tools() -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": "final_result", "parameters": ANSWER_SCHEMA}},
        {"type": "function", "function": {"name": "lookup", "parameters": LOOKUP}},
    ]


def test_openai_chat_required_and_named_function() -> None:
    sim = Simulator(clock=ManualClock())
    body: dict[str, Any] = {
        "model": "gpt-4.1-mini",
        "messages": [{"role": "user", "content": "how bad?"}],
        "tools": _chat_tools(),
        "tool_choice": "required",
    }
    _, out, _ = sim.openai_chat(KEY, body)
    (call,) = out["choices"][0]["message"]["tool_calls"]
    assert call["function"]["name"] == "final_result"
    TypeAdapter(Verdict).validate_json(call["function"]["arguments"])
    assert out["choices"][0]["finish_reason"] == "tool_calls"
    body["tool_choice"] = {"type": "function", "function": {"name": "lookup"}}
    _, out, _ = sim.openai_chat(KEY, body)
    (call,) = out["choices"][0]["message"]["tool_calls"]
    assert call["function"]["name"] == "lookup" and json.loads(call["function"]["arguments"])
    body["tool_choice"] = "none"
    _, out, _ = sim.openai_chat(KEY, body)
    assert "tool_calls" not in out["choices"][0]["message"]


def test_openai_responses_required_and_named_function() -> None:
    sim = Simulator(clock=ManualClock())
    tools = [{"type": "function", **t["function"]} for t in _chat_tools()]
    body: dict[str, Any] = {
        "model": "gpt-4.1-mini",
        "input": [{"role": "user", "content": "how bad?"}],
        "tools": tools,
        "tool_choice": "required",
    }
    _, out, _ = sim.openai_responses(KEY, body)
    (call,) = [o for o in out["output"] if o["type"] == "function_call"]
    assert call["name"] == "final_result"
    TypeAdapter(Verdict).validate_json(call["arguments"])
    body["tool_choice"] = {"type": "function", "name": "lookup"}
    _, out, _ = sim.openai_responses(KEY, body)
    (call,) = [o for o in out["output"] if o["type"] == "function_call"]
    assert call["name"] == "lookup"


def test_an_ask_after_an_earlier_wakes_tool_results_is_answered() -> None:
    """A wake that ended with the answer tool leaves its result last; the next wake's ask
    joins that message. The ask is what the reply answers; results followed only by the
    data notice are still summarised."""
    sim = Simulator(clock=ManualClock())
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "billing failed"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "lookup", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "OLD ANSWER"},
                {"type": "text", "text": DATA_NOTICE},
            ],
        },
    ]
    body = _anthropic("", None) | {"messages": messages}
    _, out, _ = sim.anthropic_messages(KEY, body)
    assert out["content"][0]["text"] == "Tool results received: OLD ANSWER"
    messages[-1]["content"].append({"type": "text", "text": "what about search?"})
    _, out, _ = sim.anthropic_messages(KEY, body)
    assert out["content"][0]["text"] == "You said: what about search?"
