"""A real wake traced end to end: Temporal's interceptor spans with Wakeful's inside them.

Temporal dev server, real Postgres, the real Anthropic SDK against the simulator; spans
and metrics go to the OpenTelemetry SDK's in-memory exporter and reader.
"""

from __future__ import annotations

import uuid
from typing import Any

from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.testing import WorkflowEnvironment

from tests.providers.traced_wake import checking_agent, traced_wake
from wakeful.activities.compile_stages import STAGES
from wakeful.agents import Tool, ToolContext
from wakeful.substrate.store import Store
from wakeful.telemetry import TelemetrySettings, setup_telemetry
from wakeful.testing.simulator import SimulatorServer
from wakeful.wake_trace import wake_ids

SCHEMA = {"type": "object", "properties": {}}


def _ping(args: dict[str, Any], ctx: ToolContext) -> str:
    return "pong"


def _by_name(spans: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


async def test_a_wake_is_traced_with_genai_attributes_and_metered(
    temporal_dev: WorkflowEnvironment, store: Store, sim_server: SimulatorServer, sim_key: str
) -> None:
    ping = Tool(name="ping", description="Ping.", input_schema=SCHEMA, fn=_ping)
    agent = checking_agent(f"otel-{uuid.uuid4().hex[:10]}", ping)
    script = [
        {"text": "Checking.", "tool_calls": [{"name": "ping"}, {"name": "boom"}]},
        {"text": "All checked."},
    ]
    spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
    telemetry = setup_telemetry(TelemetrySettings(), span_exporter=spans, metric_reader=reader)
    result = await traced_wake(
        temporal_dev, store, sim_server, sim_key, agent, script, telemetry, "check everything"
    )
    assert (result.model_calls, result.tool_calls) == (2, 2)
    finished = spans.get_finished_spans()

    chats = _by_name(finished, "chat claude-sonnet-4-6")
    compiles = _by_name(finished, "wakeful.compile scout")
    assert len(chats) == len(compiles) == 2
    for chat in chats:
        attrs = dict(chat.attributes or {})
        assert attrs["gen_ai.operation.name"] == "chat"
        assert attrs["gen_ai.provider.name"] == "anthropic" and "gen_ai.system" not in attrs
        assert attrs["gen_ai.usage.input_tokens"] > 0
        assert attrs["gen_ai.usage.output_tokens"] > 0
        assert "gen_ai.usage.cache_read.input_tokens" in attrs
        assert attrs["wakeful.cost_usd"] > 0
    (ping,) = _by_name(finished, "execute_tool ping")
    (boom,) = _by_name(finished, "execute_tool boom")
    assert ping.status.is_ok and not boom.status.is_ok

    # The wake's root is written when the wake ends, beside the workflow's own span (under
    # the span the workflow runs under, in the workflow's trace: wake_trace.wake_scope), and
    # Wakeful's spans are its children, each linked to the Temporal activity span that ran it.
    (root,) = _by_name(finished, "invoke_agent scout")
    by_id = {s.context.span_id: s for s in finished}
    (run,) = _by_name(finished, "RunWorkflow:AgentWorkflow")
    assert root.parent is not None and run.parent is not None
    assert root.parent.span_id == run.parent.span_id
    assert root.status.is_ok
    assert root.context.span_id == wake_ids(agent.tenant, result.wake_id)[1]
    assert dict(root.attributes or {})["wakeful.wake_id"] == result.wake_id
    for span, activity in (
        (chats[0], "wakeful.call_model"),
        (compiles[0], "wakeful.compile"),
        (ping, "wakeful.run_tool"),
    ):
        assert span.parent is not None and span.parent.span_id == root.context.span_id
        assert span.context.trace_id == root.context.trace_id
        (link,) = span.links
        assert by_id[link.context.span_id].name == f"RunActivity:{activity}"
    # The compile's stages likewise: beside the compile span, not its parents.
    stages = [s for s in finished if s.name.startswith("wakeful.compile.")]
    assert len(stages) == len(STAGES) * len(compiles)
    for span in stages:
        assert span.parent is not None and span.parent.span_id == root.context.span_id
        (link,) = span.links
        assert by_id[link.context.span_id].name == "RunActivity:wakeful.compile"
    assert root.start_time <= min(s.start_time for s in (*chats, *compiles, ping, boom))
    assert _by_name(finished, "RunWorkflow:AgentWorkflow")

    data = reader.get_metrics_data()
    assert data is not None
    names = {m.name for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
    assert {
        "gen_ai.client.token.usage",
        "wakeful.cache.tokens",
        "wakeful.cache.hit_ratio",
        "wakeful.window.tokens",
        "wakeful.cost",
    } <= names
    telemetry.shutdown()
