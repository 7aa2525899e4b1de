"""Failover, live: the simulator answers the agent's Anthropic call with 529 (overloaded);
the call goes to its OpenAI fallback, sent a window the compiler rendered for Chat
Completions, and the wake ends ``done``. The model call's record names who served and
why, costs and caches are each provider's own, and once the cool-down has passed (a clock
of the test's own, not a sleep) the next wake goes to Anthropic again."""

from __future__ import annotations

import dataclasses
import json
import uuid
from datetime import UTC, datetime, timedelta

from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message, open_deps, serving
from wakeful.agents import Agent, AgentRegistry
from wakeful.providers.base import Usage
from wakeful.providers.pricing import cost_usd
from wakeful.substrate.store import Store
from wakeful.testing.simulator import Script, SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.worker import build_worker

FALLBACK = ("openai_chat", "gpt-4.1-mini")


class Clock:
    """The activities' clock, moved by the test."""

    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


async def test_an_overloaded_primary_fails_over_and_returns_after_its_cooldown(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer, agent: Agent
) -> None:
    agent = dataclasses.replace(agent, fallbacks=(FALLBACK,))
    key, queue, clock = uuid.uuid4().hex, f"q-{uuid.uuid4().hex[:8]}", Clock()
    sim.simulator.set_script(Script.parse([{"error": {"status": 529}}]), key)
    ts = store.tenant(agent.tenant)
    client = temporal_dev.client
    async with open_deps(store, AgentRegistry([agent]), sim, key) as deps:
        deps.clock = clock
        async with serving(build_worker(client, deps, queue)):
            first = await wake(client, agent.runtime(), message("hello, who is on call?"), queue)
            during = await wake(client, agent.runtime(), message("and tomorrow?"), queue)
            clock.now += timedelta(seconds=301)  # the policy's cool-down is 300 s
            after = await wake(client, agent.runtime(), message("and next week?"), queue)

    assert [r.status for r in (first, during, after)] == ["done", "done", "done"]
    (served,) = ts.model_calls(first.wake_id)
    assert (served.provider, served.model) == ("openai", "gpt-4.1-mini")
    assert served.failover is not None and served.failover["served"] == "openai_chat/gpt-4.1-mini"
    (passed,) = served.failover["passed"]
    assert passed["route"] == f"anthropic/{agent.model}"
    assert "529" in passed["reason"] and "overloaded" in passed["reason"]
    # The fallback was sent the window the compiler rendered for Chat Completions.
    (compiled,) = ts.compiles(first.wake_id)
    assert compiled.alternates is not None
    ((route, window_hash),) = compiled.alternates["routes"]
    window = json.loads(ts.get_blob(window_hash))
    assert route == "openai_chat/gpt-4.1-mini" and window["model"] == "gpt-4.1-mini"
    assert window["messages"][-1]["role"] == "user" and "max_tokens" not in window

    # Cooling down, the primary is not asked at all: the fallback serves, and says why.
    (cooled,) = ts.model_calls(during.wake_id)
    assert cooled.provider == "openai" and cooled.failover is not None
    assert cooled.failover["passed"][0]["reason"].startswith("cooling down: ")
    # After the cool-down, the primary serves again.
    (back,) = ts.model_calls(after.wake_id)
    assert (back.provider, back.model, back.failover) == ("anthropic", agent.model, None)

    # Each call is priced and cached as its provider counts: the simulator's log of the
    # answered calls (the 529 is not one) is each record's usage.
    answered = sim.simulator.calls(key)
    assert [c.endpoint for c in answered] == ["openai.chat", "openai.chat", "anthropic.messages"]
    for call, rec in zip(answered, (served, cooled, back), strict=True):
        assert (rec.input_tokens, rec.output_tokens) == (
            call.usage["input_tokens"],
            call.usage["output_tokens"],
        )
        assert rec.cache_read_input_tokens == call.usage["cache_read_input_tokens"]
        usage = Usage(
            input_tokens=rec.input_tokens,
            output_tokens=rec.output_tokens,
            cache_read_input_tokens=rec.cache_read_input_tokens,
            cache_creation_input_tokens=rec.cache_creation_input_tokens,
            cache_creation_5m_input_tokens=rec.cache_creation_5m_input_tokens,
            cache_creation_1h_input_tokens=rec.cache_creation_1h_input_tokens,
        )
        assert rec.cost_usd == cost_usd(rec.provider, rec.model, usage) > 0


async def test_a_rate_limited_primarys_retry_goes_to_the_primary_again(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer, agent: Agent
) -> None:
    """A 429 fails the attempt (a rate limit waits for its own provider): its heartbeat
    says the route failed, so the retry starts at the primary, not past it as after an
    attempt that ended with the route still in flight."""
    agent = dataclasses.replace(agent, fallbacks=(FALLBACK,))
    key, queue = uuid.uuid4().hex, f"q-{uuid.uuid4().hex[:8]}"
    script = [{"error": {"status": 429, "retry_after": 1}}, {"text": "The primary answered."}]
    sim.simulator.set_script(Script.parse(script), key)
    client = temporal_dev.client
    async with open_deps(store, AgentRegistry([agent]), sim, key) as deps:
        async with serving(build_worker(client, deps, queue)):
            result = await wake(client, agent.runtime(), message("who is on call?"), queue)

    assert (result.status, result.output) == ("done", "The primary answered.")
    (served,) = store.tenant(agent.tenant).model_calls(result.wake_id)
    assert (served.provider, served.model, served.failover) == ("anthropic", agent.model, None)
    assert [c.endpoint for c in sim.simulator.calls(key)] == ["anthropic.messages"]
