"""The official ``openai`` SDK, unmodified, against the loopback simulator: Chat
Completions and Responses, function calling both ways, cached-token accounting, errors."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import openai
import pytest

from tests.providers.error_cases import TIMEOUT_AND_CONFLICT, ErrorCase, error_cases, maps_to
from wakeful.providers.openai import OpenAIChatProvider, OpenAIResponsesProvider
from wakeful.testing.simulator import Script, SimulatorServer

PARAMS = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
CHAT_TOOLS = [
    {
        "type": "function",
        "function": {"name": "list_dir", "description": "List.", "parameters": PARAMS},
    }
]
RESPONSES_TOOLS = [
    {"type": "function", "name": "list_dir", "description": "List.", "parameters": PARAMS}
]


@pytest.fixture
async def chat(sim_server: SimulatorServer, sim_key: str) -> AsyncIterator[OpenAIChatProvider]:
    p = OpenAIChatProvider(sim_key, base_url=sim_server.openai_base_url, timeout=10)
    yield p
    await p.aclose()


@pytest.fixture
async def responses(
    sim_server: SimulatorServer, sim_key: str
) -> AsyncIterator[OpenAIResponsesProvider]:
    p = OpenAIResponsesProvider(sim_key, base_url=sim_server.openai_base_url, timeout=10)
    yield p
    await p.aclose()


def chat_body(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "model": "gpt-4.1",
        "messages": messages,
        "tools": CHAT_TOOLS,
        "max_completion_tokens": 256,
        **extra,
    }


async def test_chat_function_call_round_trip(chat: OpenAIChatProvider) -> None:
    ask: list[dict[str, Any]] = [
        {"role": "system", "content": "Be useful."},
        {"role": "user", "content": 'call list_dir {"path": "src"}'},
    ]
    first = await chat.complete(chat_body(ask))
    assert first.stop_reason == "tool_use"
    (call,) = first.tool_calls
    assert (call.name, call.input) == ("list_dir", {"path": "src"})
    (sent,) = first.raw["choices"][0]["message"]["tool_calls"]
    assert call.arguments == sent["function"]["arguments"]  # the spelling, kept for replay
    assert [b.type for b in first.blocks] == ["text"] * bool(first.text) + ["tool_use"]
    follow = [
        *ask,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.input)},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call.id, "content": "main.py utils.py"},
    ]
    second = await chat.complete(chat_body(follow))
    assert second.stop_reason == "end_turn" and "main.py" in second.text


async def test_responses_function_call_round_trip(responses: OpenAIResponsesProvider) -> None:
    body: dict[str, Any] = {
        "model": "gpt-4.1",
        "instructions": "Be useful.",
        "tools": RESPONSES_TOOLS,
        "input": [{"role": "user", "content": "please list_dir path=docs"}],
        "max_output_tokens": 256,
    }
    first = await responses.complete(body)
    (call,) = first.tool_calls
    assert (call.name, call.input, first.stop_reason) == ("list_dir", {"path": "docs"}, "tool_use")
    output = first.raw["output"]
    assert [b.type for b in first.blocks] == [
        "text" if o["type"] == "message" else "tool_use" for o in output
    ]
    assert call.arguments == output[-1]["arguments"]  # the spelling, kept for replay
    body["input"] = [
        *body["input"],
        {
            "type": "function_call",
            "call_id": call.id,
            "name": call.name,
            "arguments": json.dumps(call.input),
        },
        {"type": "function_call_output", "call_id": call.id, "output": "index.md"},
    ]
    second = await responses.complete(body)
    assert second.stop_reason == "end_turn" and "index.md" in second.text


async def test_cached_tokens_become_cache_reads(
    chat: OpenAIChatProvider, text_of: Callable[..., str]
) -> None:
    system = {"role": "system", "content": text_of(3000)}
    body = chat_body([system, {"role": "user", "content": "one"}], prompt_cache_key="agent-a")
    first = await chat.complete(body)
    body2 = chat_body([system, {"role": "user", "content": "two"}], prompt_cache_key="agent-a")
    second = await chat.complete(body2)
    assert first.usage.cache_read_input_tokens == 0
    cached = second.usage.cache_read_input_tokens
    assert cached >= 1024 and (cached - 1024) % 128 == 0
    assert second.usage.input_tokens == second.raw["usage"]["prompt_tokens"] - cached
    other_key = chat_body([system, {"role": "user", "content": "3"}], prompt_cache_key="b")
    assert (await chat.complete(other_key)).usage.cache_read_input_tokens == 0


async def test_raw_sdk_sees_openai_usage_field_names(
    sim_server: SimulatorServer, sim_key: str, text_of: Callable[..., str]
) -> None:
    client = openai.AsyncOpenAI(api_key=sim_key, base_url=sim_server.openai_base_url, max_retries=0)
    msgs = [{"role": "system", "content": text_of(1500)}, {"role": "user", "content": "q"}]
    await client.chat.completions.create(model="gpt-4o", messages=msgs)  # type: ignore[arg-type]
    again = await client.chat.completions.create(model="gpt-4o", messages=msgs)  # type: ignore[arg-type]
    assert again.usage is not None and again.usage.prompt_tokens_details is not None
    assert again.usage.prompt_tokens_details.cached_tokens >= 1024  # type: ignore[operator]
    resp = await client.responses.create(model="gpt-4o", instructions=text_of(1500), input="q")
    resp2 = await client.responses.create(model="gpt-4o", instructions=text_of(1500), input="q")
    assert resp.usage is not None and resp2.usage is not None
    assert resp2.usage.input_tokens_details.cached_tokens >= 1024
    assert resp2.output_text.startswith("You said")
    await client.close()


@pytest.mark.parametrize(
    "case",
    error_cases(
        ErrorCase({"status": 429, "retry_after": 2.5}, 429, True, 2.5),
        *TIMEOUT_AND_CONFLICT,
        ErrorCase({"status": 529}, 503, True, None),
        ErrorCase({"status": 400}, 400, False, None),
        ErrorCase({"status": 404}, 404, False, None),
    ),
)
async def test_errors_map_to_provider_errors(
    chat: OpenAIChatProvider, sim_server: SimulatorServer, sim_key: str, case: ErrorCase
) -> None:
    sim_server.simulator.set_script(Script.parse([{"error": case.step}]), scope=sim_key)
    await maps_to(chat.complete(chat_body([{"role": "user", "content": "x"}])), case)


async def test_scripted_max_tokens_maps_to_length_and_back(
    responses: OpenAIResponsesProvider,
    chat: OpenAIChatProvider,
    sim_server: SimulatorServer,
    sim_key: str,
) -> None:
    sim_server.simulator.set_script(
        Script.parse([{"text": "cut", "stop_reason": "max_tokens", "times": 2}]), scope=sim_key
    )
    r = await responses.complete({"model": "gpt-4o", "input": "long please"})
    c = await chat.complete(chat_body([{"role": "user", "content": "long"}]))
    assert (r.stop_reason, c.stop_reason) == ("max_tokens", "max_tokens")
    assert c.raw["choices"][0]["finish_reason"] == "length"
    assert r.raw["status"] == "incomplete"
