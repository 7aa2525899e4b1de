"""Streaming through the official SDKs against the simulator's server-sent events: the
reply put back together from the stream is the reply the same call gets unstreamed, and
its text and tool calls reach ``on_event`` as they come, in order."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from wakeful.errors import ProviderError
from wakeful.providers.anthropic import AnthropicProvider
from wakeful.providers.base import StreamEvent, StreamingProvider
from wakeful.providers.openai import OpenAIChatProvider, OpenAIResponsesProvider
from wakeful.testing.simulator import Script, SimulatorServer

SCRIPT = [
    {
        "text": "Let me read the notes for the billing service first.",
        "tool_calls": [{"name": "read_file", "input": {"path": "notes/billing.md", "n": 2}}],
    },
    {"text": "The billing deploy failed at the migrate step; roll it back, then retry."},
]
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}


def anthropic_body() -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-6",
        "max_tokens": 256,
        "tools": [{"name": "read_file", "description": "Read.", "input_schema": SCHEMA}],
        "messages": [{"role": "user", "content": "Why did billing fail?"}],
    }


def chat_body() -> dict[str, Any]:
    return {
        "model": "gpt-4.1-mini",
        "tools": [{"type": "function", "function": {"name": "read_file", "parameters": SCHEMA}}],
        "messages": [{"role": "user", "content": "Why did billing fail?"}],
    }


def responses_body() -> dict[str, Any]:
    return {
        "model": "gpt-4.1-mini",
        "tools": [{"type": "function", "name": "read_file", "parameters": SCHEMA}],
        "input": [{"role": "user", "content": "Why did billing fail?"}],
    }


CASES: list[tuple[Callable[[str, str], StreamingProvider], Callable[[], dict[str, Any]], bool]] = [
    (lambda key, url: AnthropicProvider(key, base_url=url, timeout=10), anthropic_body, False),
    (lambda key, url: OpenAIChatProvider(key, base_url=url, timeout=10), chat_body, True),
    (lambda key, url: OpenAIResponsesProvider(key, base_url=url, timeout=10), responses_body, True),
]


@pytest.mark.parametrize(("make", "body", "v1"), CASES, ids=["anthropic", "chat", "responses"])
async def test_a_streamed_reply_is_the_unstreamed_reply_and_its_pieces_come_in_order(
    sim_server: SimulatorServer,
    sim_key: str,
    make: Callable[[str, str], StreamingProvider],
    body: Callable[[], dict[str, Any]],
    v1: bool,
) -> None:
    url = sim_server.openai_base_url if v1 else sim_server.base_url
    simulator = sim_server.simulator
    plain, streamed = make(sim_key, url), make(sim_key, url)

    def fresh(step: int) -> None:
        """The scope as new (ids and cache accounting start over) at ``step``."""
        simulator.reset(sim_key)
        simulator.set_script(Script.parse(SCRIPT[step:]), sim_key)

    try:
        for step in range(len(SCRIPT)):
            events: list[StreamEvent] = []
            fresh(step)
            expected = await plain.complete(body())
            fresh(step)
            got = await streamed.stream(body(), events.append)
            assert got == expected
            # The text came in pieces (the simulator sends 8 characters at a time), then
            # each tool call whole, as the reply has them.
            texts = [e.text for e in events if e.kind == "text"]
            assert len(texts) > 1 and "".join(texts) == expected.text
            assert [e.call for e in events if e.kind == "tool_call"] == expected.tool_calls
    finally:
        await plain.aclose()  # type: ignore[attr-defined]
        await streamed.aclose()  # type: ignore[attr-defined]


async def test_an_overloaded_stream_is_a_retryable_provider_error(
    sim_server: SimulatorServer, sim_key: str
) -> None:
    sim_server.simulator.set_script(Script.parse([{"error": {"status": 529}}]), sim_key)
    provider = AnthropicProvider(sim_key, base_url=sim_server.base_url, timeout=10)
    try:
        with pytest.raises(ProviderError) as err:
            await provider.stream(anthropic_body(), lambda _: None)
    finally:
        await provider.aclose()
    assert err.value.status == 529 and err.value.retryable
