"""A parent wake that delegates to a child agent is one trace: Temporal carries the trace
into the child's workflow, and each wake's GenAI spans hang under its ``invoke_agent``.

Temporal dev server, real Postgres, the simulator; the spans go to global providers set as
an application sets them, which Wakeful's default telemetry records to."""

from __future__ import annotations

import json

from opentelemetry.sdk.trace import ReadableSpan
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message
from tests.orchestration.helpers import worker
from tests.otel_user import user_global_providers
from wakeful.agents import Agent
from wakeful.providers.simulator.script import Script
from wakeful.providers.simulator.server import SimulatorServer
from wakeful.substrate.store import Store
from wakeful.telemetry import Telemetry
from wakeful.wake_trace import wake_ids
from wakeful.worker.client import connect, wake

FACTS = {"path": "README.md", "facts": ["release 2.4.0 is due 2026-12-15"]}


def _attr(span: ReadableSpan, key: str) -> object:
    return dict(span.attributes or {}).get(key)


async def test_a_child_agents_wake_is_in_its_parents_trace(
    temporal_dev: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    exporter, _ = user_global_providers()
    script = Script.parse(
        [
            {
                "text": "Splitting the work.",
                "tool_calls": [
                    {"name": "delegate", "input": {"kind": "facts", "task": "Facts of README.md"}}
                ],
            },
            {"text": json.dumps(FACTS)},  # the child's answer
            {"text": "One card merged."},
        ]
    )
    env = temporal_dev
    target = env.client.service_client.config.target_host
    client = await connect(
        target, env.client.namespace, interceptors=[Telemetry().tracing_interceptor()]
    )
    async with worker(client, store, [agent], osim, script=script) as (queue, _):
        result = await wake(client, agent.runtime(), message("survey the docs"), queue)
    assert (result.status, result.tool_calls) == ("done", 1)

    spans = exporter.get_finished_spans()
    (parent,) = [
        s
        for s in spans
        if s.name == "invoke_agent scout" and _attr(s, "wakeful.wake_id") == result.wake_id
    ]
    tree = [s for s in spans if s.context.trace_id == parent.context.trace_id]
    (child,) = [s for s in tree if s.name == "invoke_agent scout/child/1"]
    child_wake = str(_attr(child, "wakeful.wake_id"))
    assert child.context.span_id == wake_ids(agent.tenant, child_wake)[1]
    # one tree: every span's parent is in the trace, but the client's start of the parent
    by_id = {s.context.span_id: s for s in tree}
    roots = [s.name for s in tree if s.parent is None or s.parent.span_id not in by_id]
    assert roots == ["StartUpdateWithStartWorkflow:AgentWorkflow"]
    assert any(s.name.startswith("StartChildWorkflow:") for s in tree)
    for root, agent_name in ((parent, "scout"), (child, "scout/child/1")):
        chats = [
            s
            for s in tree
            if s.name.startswith("chat ")
            and s.parent is not None
            and s.parent.span_id == root.context.span_id
        ]
        assert chats and all(_attr(c, "gen_ai.agent.name") == agent_name for c in chats)
    # the child ran under the parent's workflow, started from its child activities
    assert any(s.name == "RunWorkflow:ChildAgentWorkflow" for s in tree)
