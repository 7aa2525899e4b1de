"""A summary of a span the agent's last request cached is asked as that request continued
(as the handoff note is): the span is a cache read, not a second copy under another
system text. What the prefix does not hold is given whole in the ask; a span it holds
none of, or a prefix gone cold, goes in the prompt, as before."""

from __future__ import annotations

import json
from datetime import timedelta

from temporalio.testing import ActivityEnvironment, WorkflowEnvironment

from tests.e2e.harness import make_deps
from tests.orchestration.helpers import serving_agent
from wakeful.activities.consolidate import ConsolidateActivities
from wakeful.agents import Agent, AgentRegistry
from wakeful.consolidation.contracts import AgentIn, SpanIn
from wakeful.consolidation.prompt import HEADER, SYSTEM
from wakeful.consolidation.spans import Span
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer

ASKS = (
    "Goal: migrate the billing service to Postgres 16; the cutover is set for 02:00 UTC.",
    "Blocked: waiting on the staging credentials from ops, ticket OPS-311.",
    "Status please: what is left before the cutover?",
)
FILLER = " ".join(
    f"Context line {n}: the billing tables keep their indexes and the reports read them."
    for n in range(40)
)
HISTORY = ("turn", "tool_call", "tool_result")


async def test_a_summary_of_a_cached_span_continues_the_agents_last_request(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    async with serving_agent(temporal_skipping.client, store, agent, osim) as served:
        wakes = [await served.ask(f"{ask} {FILLER}") for ask in ASKS]
        key = served.key
    ts = store.tenant(agent.tenant)
    (last,) = [w for w in ts.wakes(agent.name) if w.wake_id == wakes[-1].wake_id]
    assert last.finished_at is not None
    call = max(ts.model_calls(last.wake_id), key=lambda c: c.call_index)
    window = json.loads(ts.get_blob(call.window_hash))
    acts = ConsolidateActivities(make_deps(store, AgentRegistry([agent]), osim, key))

    def span_of(*numbers: int) -> Span:
        ids = [
            e.id
            for n in numbers
            for e in ts.events(agent.name, wake_id=wakes[n].wake_id)
            if e.kind in HISTORY
        ]
        return Span(level=1, source="events", ids=tuple(ids))

    def request(span: Span, after: timedelta, round_id: str) -> dict[str, object]:
        a = AgentIn(
            tenant=agent.tenant, agent=agent.name, now=last.finished_at + after, round_id=round_id
        )
        inp = SpanIn(agent=a, span=span, provider=agent.provider, model=agent.model)
        reused, body = acts._draft_request(ts, inp)
        assert reused is None
        return body

    # The first two wakes are in the history the last request cached: the summary's
    # request is that request, byte for byte, then the reply and the ask.
    cached = span_of(0, 1)
    body = request(cached, timedelta(seconds=20), "r1")
    n = len(window["messages"])
    messages = body["messages"]
    assert isinstance(messages, list)
    as_sent = {k: v for k, v in window.items() if k != "max_tokens"}
    continued = {k: v for k, v in body.items() if k != "max_tokens"} | {"messages": messages[:n]}
    assert json.dumps(continued, sort_keys=True) == json.dumps(as_sent, sort_keys=True)
    assert [m["role"] for m in messages[n:]] == ["assistant", "user"]
    assert messages[-1]["content"].startswith(SYSTEM) and HEADER in messages[-1]["content"]
    # Asked so, the span is read from the agent's cache.
    a = AgentIn(
        tenant=agent.tenant,
        agent=agent.name,
        now=last.finished_at + timedelta(seconds=20),
        round_id="r2",
    )
    inp = SpanIn(agent=a, span=cached, provider=agent.provider, model=agent.model)
    await ActivityEnvironment().run(acts.summarise, inp)
    logged = ts.logged(f"r2:draft:{cached.key}")
    assert logged is not None
    usage = logged.detail["usage"]
    total = usage["input_tokens"] + usage["cache_read_input_tokens"]
    total += usage["cache_creation_input_tokens"]
    assert usage["cache_read_input_tokens"] > 0.5 * total, usage

    # Events the cached prefix does not hold (the last wake's reply came after its
    # request) are given whole in the ask; the others by their openings.
    reply = [e for e in ts.events(agent.name, wake_id=last.wake_id) if e.role == "assistant"]
    mixed = request(span_of(1, 2), timedelta(seconds=20), "r3")
    ask = mixed["messages"][-1]["content"]  # type: ignore[index]
    assert reply and all(e.text.strip() in ask for e in reply)
    assert FILLER not in ask  # the earlier turns are above, listed by their openings
    # None of the span in the cached prefix, or the cache gone cold: the span in the
    # prompt, under consolidation's own system text.
    alone = Span(level=1, source="events", ids=tuple(e.id for e in reply))
    for span, after in ((alone, timedelta(seconds=20)), (cached, timedelta(hours=2))):
        plain = request(span, after, "r4")
        assert plain["system"] == SYSTEM and len(plain["messages"]) == 1  # type: ignore[arg-type]
        assert str(plain["messages"][0]["content"]).startswith(HEADER)  # type: ignore[index]
