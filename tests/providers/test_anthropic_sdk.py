"""The official ``anthropic`` SDK, unmodified, against the loopback simulator.

Covers the wire contract (tool use both ways, usage fields exactly as Anthropic names
them, error bodies) and :class:`AnthropicProvider` on top of it. Nothing is patched: the
SDK speaks HTTP to 127.0.0.1.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import anthropic
import pytest

from tests.providers.error_cases import TIMEOUT_AND_CONFLICT, ErrorCase, error_cases, maps_to
from wakeful.errors import ProviderError
from wakeful.providers.anthropic import AnthropicProvider
from wakeful.testing.simulator import Script, SimulatorServer

TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file from the workspace.",
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    }
]


@pytest.fixture
async def client(
    sim_server: SimulatorServer, sim_key: str
) -> AsyncIterator[anthropic.AsyncAnthropic]:
    sdk = anthropic.AsyncAnthropic(api_key=sim_key, base_url=sim_server.base_url, max_retries=0)
    yield sdk
    await sdk.close()


@pytest.fixture
async def provider(sim_server: SimulatorServer, sim_key: str) -> AsyncIterator[AnthropicProvider]:
    p = AnthropicProvider(sim_key, base_url=sim_server.base_url, timeout=10)
    yield p
    await p.aclose()


def request(system: Any, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-6",
        "max_tokens": 512,
        "tools": TOOLS,
        "system": system,
        "messages": messages,
        **extra,
    }


async def test_tool_use_round_trip(provider: AnthropicProvider) -> None:
    ask = [{"role": "user", "content": "Please use read_file on notes/todo.md"}]
    first = await provider.complete(request("You are helpful.", ask))
    assert first.stop_reason == "tool_use"
    (call,) = first.tool_calls
    assert (call.name, call.input) == ("read_file", {"path": "notes/todo.md"})
    assert call.id.startswith("toolu_")
    # the reply's blocks in the provider's order, each call with its arguments' spelling
    assert [(b.type, b.text, b.call) for b in first.blocks] == [
        (c["type"], c.get("text", ""), call if c["type"] == "tool_use" else None)
        for c in first.raw["content"]
    ]
    assert json.loads(call.arguments) == call.input

    follow = [
        *ask,
        {"role": "assistant", "content": first.raw["content"]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": call.id, "content": "1. write the report"}
            ],
        },
    ]
    second = await provider.complete(request("You are helpful.", follow))
    assert second.stop_reason == "end_turn" and not second.tool_calls
    assert "write the report" in second.text


async def test_usage_fields_are_named_as_anthropic_names_them(
    client: anthropic.AsyncAnthropic, text_of: Callable[..., str]
) -> None:
    system = [{"type": "text", "text": text_of(2000), "cache_control": {"type": "ephemeral"}}]
    msg = await client.messages.create(**request(system, [{"role": "user", "content": "hi"}]))
    raw = msg.usage.to_dict()
    assert set(raw) >= {
        "input_tokens",
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "cache_creation",
    }
    assert set(raw["cache_creation"]) == {"ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens"}
    assert (
        msg.usage.cache_creation_input_tokens
        == raw["cache_creation"]["ephemeral_5m_input_tokens"]
        > 2000
    )


async def test_cache_write_then_read_on_a_repeated_prefix(
    provider: AnthropicProvider, text_of: Callable[..., str]
) -> None:
    system = [{"type": "text", "text": text_of(2500), "cache_control": {"type": "ephemeral"}}]
    first = await provider.complete(request(system, [{"role": "user", "content": "one"}]))
    second = await provider.complete(request(system, [{"role": "user", "content": "two"}]))
    assert first.usage.cache_read_input_tokens == 0
    assert first.usage.cache_creation_5m_input_tokens > 2500
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    assert second.usage.cache_creation_input_tokens == 0


async def test_editing_the_system_prompt_invalidates_the_messages_cache(
    provider: AnthropicProvider, text_of: Callable[..., str]
) -> None:
    history = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": text_of(1500, "h"), "cache_control": {"type": "ephemeral"}}
            ],
        }
    ]
    base: list[dict[str, Any]] = [
        {"type": "text", "text": text_of(1500), "cache_control": {"type": "ephemeral"}}
    ]
    await provider.complete(request(base, history))
    warm = await provider.complete(request(base, history))
    assert warm.usage.cache_creation_input_tokens == 0
    edited = [{**base[0], "text": "Now is 2026-11-22T10:00. " + base[0]["text"]}]
    cold = await provider.complete(request(edited, history))
    assert cold.usage.cache_read_input_tokens == 0
    assert cold.usage.cache_creation_input_tokens == cold.usage.total_input_tokens - (
        cold.usage.input_tokens
    )


async def test_fifth_breakpoint_is_rejected_like_the_api(
    client: anthropic.AsyncAnthropic,
) -> None:
    system = [
        {"type": "text", "text": f"rule {i}", "cache_control": {"type": "ephemeral"}}
        for i in range(5)
    ]
    with pytest.raises(anthropic.BadRequestError) as err:
        await client.messages.create(**request(system, [{"role": "user", "content": "x"}]))
    assert err.value.status_code == 400
    assert err.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    assert err.value.body["error"]["message"] == (  # type: ignore[index]
        "A maximum of 4 blocks with cache_control may be provided. Found 5."
    )


async def test_ttl_expiry_follows_the_injected_clock(
    provider: AnthropicProvider, sim_server: SimulatorServer, text_of: Callable[..., str]
) -> None:
    short = {
        "type": "text",
        "text": text_of(1500, "a"),
        "cache_control": {"type": "ephemeral", "ttl": "1h"},
    }
    tail = {"type": "text", "text": text_of(1500, "b"), "cache_control": {"type": "ephemeral"}}
    ask = [{"role": "user", "content": "q"}]
    cold = await provider.complete(request([short, tail], ask))
    assert cold.usage.cache_creation_1h_input_tokens > 0
    assert cold.usage.cache_creation_5m_input_tokens > 0
    sim_server.simulator.advance(10 * 60)  # past 5m, within 1h
    later = await provider.complete(request([short, tail], ask))
    assert later.usage.cache_read_input_tokens == cold.usage.cache_creation_1h_input_tokens
    assert later.usage.cache_creation_5m_input_tokens == cold.usage.cache_creation_5m_input_tokens
    sim_server.simulator.advance(2 * 3600)
    expired = await provider.complete(request([short, tail], ask))
    assert expired.usage.cache_read_input_tokens == 0


@pytest.mark.parametrize(
    "case",
    error_cases(
        ErrorCase({"status": 429, "retry_after": 7}, 429, True, 7.0),
        *TIMEOUT_AND_CONFLICT,
        ErrorCase({"status": 529}, 529, True, None),
        ErrorCase({"status": 500}, 500, True, None),
        ErrorCase({"status": 400, "message": "messages: bad"}, 400, False, None),
        ErrorCase({"status": 401}, 401, False, None),
        ErrorCase({"status": 403}, 403, False, None),
        ErrorCase({"status": 413}, 413, False, None),
    ),
)
async def test_scripted_errors_map_to_provider_errors(
    provider: AnthropicProvider, sim_server: SimulatorServer, sim_key: str, case: ErrorCase
) -> None:
    sim_server.simulator.set_script(
        Script.parse([{"error": case.step}, {"text": "fine"}]), scope=sim_key
    )
    ask = request("s", [{"role": "user", "content": "x"}])
    err = await maps_to(provider.complete(ask), case)
    assert "request_id req_sim_" in str(err)
    assert (await provider.complete(ask)).text == "fine"


async def test_unreachable_server_is_a_retryable_error() -> None:
    with SimulatorServer() as gone:
        url = gone.base_url
    provider = AnthropicProvider("k", base_url=url, timeout=2)
    with pytest.raises(ProviderError) as err:
        await provider.complete(request("s", [{"role": "user", "content": "x"}]))
    await provider.aclose()
    assert err.value.retryable and err.value.status is None


async def test_unknown_top_level_fields_are_sent_through(
    provider: AnthropicProvider,
    sim_server: SimulatorServer,
    sim_key: str,
) -> None:
    body = request("s", [{"role": "user", "content": "x"}], wakeful_future_field={"a": 1})
    reply = await provider.complete(body)
    assert reply.provider == "anthropic" and reply.model == "claude-sonnet-4-6"
    assert sim_server.simulator.calls(sim_key)[-1].endpoint == "anthropic.messages"
