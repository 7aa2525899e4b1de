"""A reply that never finishes, its bytes still coming (no read timeout ends it): the attempt
is abandoned at the worker's ``model_attempt_timeout_s`` as a timeout. An agent with a
fallback fails over to it; one without is retried, and its next attempt answers. Live: the
simulator trickles the reply (a script's ``trickle`` step), streamed and not."""

from __future__ import annotations

import dataclasses
import uuid

from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message, model_call_retry, open_deps, serving
from tests.orchestration.helpers import within
from wakeful.agents import Agent, AgentRegistry
from wakeful.substrate.store import Store
from wakeful.testing.simulator import Script, SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.worker import build_worker
from wakeful.workflows.agent import workflow_id
from wakeful.workflows.retries import MODEL_TIMEOUT

FALLBACK = ("openai_chat", "gpt-4.1-mini")
# Each attempt gets this long, the one that answers too: a simulator reply takes
# milliseconds, so even a loaded machine leaves it far inside the deadline.
DEADLINE_S = 5.0
# Failure timeout only: a trickle nothing cuts runs into MODEL_TIMEOUT, far past this.
BOUND_S = MODEL_TIMEOUT.total_seconds() / 5


async def test_a_trickling_stream_is_cut_at_the_deadline_and_fails_over(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer, agent: Agent
) -> None:
    agent = dataclasses.replace(agent, fallbacks=(FALLBACK,))
    key, queue = uuid.uuid4().hex, f"q-{uuid.uuid4().hex[:8]}"
    sim.simulator.set_script(Script.parse([{"text": "Never finished.", "trickle": True}]), key)
    client = temporal_dev.client
    async with open_deps(store, AgentRegistry([agent]), sim, key) as deps:
        deps.model_attempt_timeout_s = DEADLINE_S
        async with serving(build_worker(client, deps, queue)):
            result = await within(
                BOUND_S,
                client,
                [workflow_id(agent.tenant, agent.name)],
                wake(client, agent.runtime(), message("hello, who is on call?"), queue),
            )

    assert result.status == "done"
    assert sim.simulator.trickles(key) == 1
    (served,) = store.tenant(agent.tenant).model_calls(result.wake_id)
    assert (served.provider, served.model) == ("openai", "gpt-4.1-mini")
    assert served.failover is not None
    (passed,) = served.failover["passed"]
    assert passed["route"] == f"anthropic/{agent.model}"
    assert f"no complete reply within {DEADLINE_S:g} s" in passed["reason"]


async def test_a_trickling_reply_without_a_fallback_is_retried(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer, agent: Agent
) -> None:
    key, queue = uuid.uuid4().hex, f"q-{uuid.uuid4().hex[:8]}"
    script = [{"text": "Never finished.", "trickle": True}, {"text": "Answered on a retry."}]
    sim.simulator.set_script(Script.parse(script), key)
    client, wid = temporal_dev.client, workflow_id(agent.tenant, agent.name)
    async with open_deps(store, AgentRegistry([agent]), sim, key) as deps:
        deps.model_attempt_timeout_s = DEADLINE_S
        deps.stream_model_calls = False  # the JSON body never comes, whitespace does
        async with serving(build_worker(client, deps, queue)):
            result = await within(
                BOUND_S, client, [wid], wake(client, agent.runtime(), message("hello"), queue)
            )

    assert (result.status, result.output) == ("done", "Answered on a retry.")
    assert sim.simulator.trickles(key) == 1
    started = await model_call_retry(client, wid)
    assert started.attempt == 2
    # The server may wrap a failure ("Failure exceeds size limit."): the activity's is a cause.
    failure, said = started.last_failure, []
    while failure.message:
        said.append(failure.message)
        failure = failure.cause
    assert any(f"no complete reply within {DEADLINE_S:g} s" in m for m in said), said
