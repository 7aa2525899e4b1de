"""A parent wake that delegates to a child agent is one trace: Temporal carries the trace
into the child's workflow, each wake's GenAI spans hang under its ``invoke_agent``, and the
delegation is an ``execute_tool`` span with the child's workflow beneath it.

Temporal dev server, real Postgres, the simulator; the spans go to global providers set as
an application sets them, which Wakeful's default telemetry records to."""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message
from tests.orchestration.helpers import child_bundle, wakeful_client, worker
from tests.otel_user import user_global_providers
from wakeful.agents import Agent
from wakeful.contracts import WakeResult
from wakeful.substrate.store import Store
from wakeful.telemetry import Telemetry
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.wake_trace import tool_call_ids, wake_ids
from wakeful.worker.client import wake
from wakeful.workflows.child import SUMMARY_CHARS, child_summary
from wakeful.workflows.state import child_workflow_id

FACTS = {"path": "README.md", "facts": ["release 2.4.0 is due 2026-12-15"]}


def _under(span: ReadableSpan, root: ReadableSpan, tree: list[ReadableSpan]) -> bool:
    """Whether ``root`` is an ancestor of ``span`` in ``tree``."""
    by_id = {s.context.span_id: s for s in tree}
    node: ReadableSpan | None = span
    while node is not None and node.parent is not None:
        if node.parent.span_id == root.context.span_id:
            return True
        node = by_id.get(node.parent.span_id)
    return False


def _attr(span: ReadableSpan, key: str) -> object:
    return dict(span.attributes or {}).get(key)


async def _traced_client(env: WorkflowEnvironment) -> Client:
    """A client of ``env``'s server whose calls start spans and carry the trace into the
    workflows, as Wakeful's client does with telemetry on."""
    return await wakeful_client(env, interceptors=[Telemetry().tracing_interceptor()])


async def _delegating_wake(
    env: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,
    agent: Agent,
    delegation: dict[str, str],
    *then: dict[str, Any],
) -> tuple[Client, WakeResult]:
    """One wake of ``agent`` ("survey the docs") through :func:`_traced_client`, in which the
    model splits the work with one ``delegate`` call (``delegation``: its input), then
    replies ``then``. Returns the client and the wake's result."""
    split = {
        "text": "Splitting the work.",
        "tool_calls": [{"name": "delegate", "input": delegation}],
    }
    script = Script.parse([split, *then])
    client = await _traced_client(env)
    async with worker(client, store, [agent], sim, script=script) as (queue, _):
        result = await wake(client, agent.runtime(), message("survey the docs"), queue)
    return client, result


async def test_a_child_agents_wake_is_in_its_parents_trace(
    temporal_dev: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    exporter, _ = user_global_providers()
    client, result = await _delegating_wake(
        temporal_dev, store, osim, agent, {"kind": "facts", "task": "Facts of README.md"},
        {"text": json.dumps(FACTS)},  # the child's answer
        {"text": "One card merged."},
    )  # fmt: skip
    assert (result.status, result.tool_calls) == ("done", 1)
    (call_id,) = [
        e.tool_call_id
        for e in store.tenant(agent.tenant).events(agent.name, wake_id=result.wake_id)
        if e.kind == "tool_call"
    ]

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

    # The delegation is an execute_tool span under the parent's wake, and the child's
    # workflow (its invoke_agent too) is beneath it.
    (call,) = [s for s in tree if s.name == "execute_tool delegate"]
    a = dict(call.attributes or {})
    assert a["gen_ai.operation.name"] == "execute_tool"
    assert a["gen_ai.tool.name"] == "delegate"
    assert a["gen_ai.agent.name"] == "scout"
    assert a["gen_ai.conversation.id"] == result.session_id
    assert (a["wakeful.child"], a["wakeful.child.status"]) == ("scout/child/1", "ok")
    assert call.context.span_id == tool_call_ids(agent.tenant, result.wake_id, call_id)[1]
    assert call.parent is not None and call.parent.span_id == parent.context.span_id
    (start,) = [s for s in tree if s.name == "StartChildWorkflow:ChildAgentWorkflow"]
    assert start.parent is not None and start.parent.span_id == call.context.span_id
    assert child.parent is not None and child.parent.span_id == start.context.span_id
    assert call.start_time <= start.start_time and call.end_time >= child.end_time
    # the parent's wake holds its activities' spans, the child's wake its own
    for root in (parent, child):
        assert any(
            s.name == "RunActivity:wakeful.call_model" and _under(s, root, tree) for s in tree
        )

    # The Temporal UI names the child workflow after who does what.
    described = await client.get_workflow_handle(
        child_workflow_id(agent.tenant, "scout/child/1")
    ).describe()
    assert await described.static_summary() == (
        "delegate to scout/child/1 (facts): Facts of README.md"
    )


async def test_a_refused_delegation_is_an_execute_tool_span_with_its_error(
    temporal_dev: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    exporter, _ = user_global_providers()
    _, result = await _delegating_wake(
        temporal_dev, store, osim, agent, {"kind": "nope", "task": "Do it"},
        {"text": "Done without help."},
    )  # fmt: skip
    assert result.status == "done"
    spans = exporter.get_finished_spans()
    (parent,) = [
        s
        for s in spans
        if s.name == "invoke_agent scout" and _attr(s, "wakeful.wake_id") == result.wake_id
    ]
    (call,) = [
        s
        for s in spans
        if s.name == "execute_tool delegate" and s.context.trace_id == parent.context.trace_id
    ]
    assert call.parent is not None and call.parent.span_id == parent.context.span_id
    assert (_attr(call, "wakeful.child.status"), _attr(call, "error.type")) == (
        "refused",
        "refused",
    )
    assert not call.status.is_ok and "nope" in str(call.status.description)
    assert not any(s.name.startswith("StartChildWorkflow:") for s in spans)


def test_a_child_workflows_summary_is_one_short_line() -> None:
    bundle = child_bundle(
        child="scout/child/2",
        call_id="toolu_1",
        task="find the release dates\n of   every component " + "x" * 300,
        max_model_calls=3,
        max_result_chars=500,
    )
    summary = child_summary(bundle)
    assert summary.startswith(
        "delegate to scout/child/2 (facts): find the release dates of every component x"
    )
    assert len(summary) == SUMMARY_CHARS and summary.endswith("…") and "\n" not in summary
