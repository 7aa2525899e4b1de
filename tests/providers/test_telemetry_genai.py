"""Wakeful as an OpenTelemetry citizen: current GenAI conventions, one trace tree per wake
with Temporal's spans, the process's global providers, opt-in redacted content.

Temporal dev server, real Postgres, the real Anthropic SDK against the simulator; spans and
metrics go to the OpenTelemetry SDK's in-memory exporter and reader.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from opentelemetry import propagate, trace
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from tests.otel_user import user_global_providers
from tests.providers.traced_wake import checking_agent, traced_wake
from wakeful.agents import Agent, Tool, ToolContext
from wakeful.contracts import WakeResult
from wakeful.substrate.store import Store
from wakeful.telemetry import Telemetry, TelemetrySettings, setup_telemetry
from wakeful.testing.simulator import SimulatorServer
from wakeful.wake_trace import TRACESTATE_KEY, wake_ids, wake_scope
from wakeful.worker.serve import build_telemetry
from wakeful.worker.settings import load_settings

SCHEMA = {"type": "object", "properties": {"host": {"type": "string"}}}
SECRET = "AKIAIOSFODNN7EXAMPLE"  # an AWS access key id: the default redaction's rule

# The GenAI attributes of the current semantic conventions Wakeful may set (gen_ai.system
# is deprecated: replaced by gen_ai.provider.name).
CURRENT_GENAI = frozenset(
    {
        "gen_ai.operation.name",
        "gen_ai.provider.name",
        "gen_ai.request.model",
        "gen_ai.response.model",
        "gen_ai.response.id",
        "gen_ai.response.finish_reasons",
        "gen_ai.conversation.id",
        "gen_ai.agent.name",
        "gen_ai.data_source.id",
        "gen_ai.tool.name",
        "gen_ai.tool.call.id",
        "gen_ai.tool.type",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
        "gen_ai.usage.cache_read.input_tokens",
        "gen_ai.usage.cache_creation.input_tokens",
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
        "gen_ai.retrieval.query.text",
        "gen_ai.token.type",
    }
)
CONTENT = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.result")


def _lookup(args: dict[str, Any], ctx: ToolContext) -> str:
    return f"host {args.get('host', '?')} answered; its key is {SECRET}"


def _agent() -> Agent:
    lookup = Tool(name="lookup", description="Look up.", input_schema=SCHEMA, fn=_lookup)
    return checking_agent(f"genai-{uuid.uuid4().hex[:10]}", lookup)


async def _run_wake(
    env: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,
    key: str,
    telemetry: Telemetry,
    text: str = "check everything",
) -> tuple[Agent, WakeResult]:
    """One wake with two tool calls, through a client and worker carrying Temporal's
    tracing interceptor (as ``wakeful worker`` wires them)."""
    agent = _agent()
    script = [
        {
            "text": "Checking.",
            "tool_calls": [{"name": "lookup", "input": {"host": "db1"}}, {"name": "boom"}],
        },
        {"text": "All checked."},
    ]
    result = await traced_wake(env, store, sim, key, agent, script, telemetry, text)
    assert (result.model_calls, result.tool_calls) == (2, 2)
    return agent, result


def _named(spans: list[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def _wake_spans(finished: tuple[ReadableSpan, ...], agent: Agent) -> list[ReadableSpan]:
    """Every span in the trace of the agent's ``invoke_agent`` span."""
    (root,) = [s for s in finished if s.name == f"invoke_agent {agent.name}"]
    return [s for s in finished if s.context.trace_id == root.context.trace_id]


def _ancestors(span: ReadableSpan, by_id: dict[int, ReadableSpan]) -> list[int]:
    """Span ids from ``span``'s parent up to the first one not among ``by_id``."""
    out: list[int] = []
    node = span
    while node.parent is not None:
        out.append(node.parent.span_id)
        if node.parent.span_id not in by_id:
            break
        node = by_id[node.parent.span_id]
    return out


def _points(reader: InMemoryMetricReader) -> dict[str, tuple[str, list[Any]]]:
    data = reader.get_metrics_data()
    assert data is not None
    return {
        m.name: (m.unit, list(m.data.data_points))
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
    }


async def test_a_wake_is_one_trace_tree_with_current_genai_attributes_and_metrics(
    temporal_dev: WorkflowEnvironment, store: Store, sim_server: SimulatorServer, sim_key: str
) -> None:
    spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
    telemetry = setup_telemetry(TelemetrySettings(), span_exporter=spans, metric_reader=reader)
    agent, result = await _run_wake(temporal_dev, store, sim_server, sim_key, telemetry)
    telemetry.shutdown()
    finished = spans.get_finished_spans()
    tree = _wake_spans(finished, agent)

    # One trace, one tree: Temporal's workflow and activity spans and Wakeful's GenAI spans.
    by_id = {s.context.span_id: s for s in tree}
    roots = [s for s in tree if s.parent is None or s.parent.span_id not in by_id]
    assert len(roots) == 1, [s.name for s in roots]
    (root,) = _named(tree, "invoke_agent scout")
    assert root.context.span_id == wake_ids(agent.tenant, result.wake_id)[1]
    # where the workflow runs: beside RunWorkflow, under the client's start
    (run,) = _named(tree, "RunWorkflow:AgentWorkflow")
    assert root.parent is not None and run.parent is not None
    assert root.parent.span_id == run.parent.span_id == roots[0].context.span_id
    assert roots[0].name == "StartUpdateWithStartWorkflow:AgentWorkflow"
    # Temporal's spans of the wake's activities are beneath it, and only those
    runs = [s for s in tree if s.name.startswith("RunActivity:")]
    of_wake = {s.name for s in runs if root.context.span_id in _ancestors(s, by_id)}
    assert of_wake == {
        "RunActivity:wakeful.compile",
        "RunActivity:wakeful.call_model",
        "RunActivity:wakeful.run_tool",
    }
    assert len([s for s in runs if root.context.span_id in _ancestors(s, by_id)]) == 6
    chats = _named(tree, "chat claude-sonnet-4-6")
    tools = _named(tree, "execute_tool lookup") + _named(tree, "execute_tool boom")
    assert len(chats) == 2 and len(tools) == 2
    for span in (*chats, *tools):
        assert span.parent is not None and span.parent.span_id == root.context.span_id
        (link,) = span.links
        assert by_id[link.context.span_id].name.startswith("RunActivity:")

    # Only current GenAI attribute names, never the deprecated gen_ai.system.
    used = {k for s in tree for k in (s.attributes or {}) if k.startswith("gen_ai.")}
    assert used <= CURRENT_GENAI, used - CURRENT_GENAI
    assert "gen_ai.system" not in used
    for chat in chats:
        assert chat.kind is trace.SpanKind.CLIENT
        a = dict(chat.attributes or {})
        assert a["gen_ai.operation.name"] == "chat"
        assert a["gen_ai.provider.name"] == "anthropic"
        assert a["gen_ai.request.model"] == a["gen_ai.response.model"] == "claude-sonnet-4-6"
        assert str(a["gen_ai.response.id"]).startswith("msg_")
        assert a["gen_ai.conversation.id"] == result.session_id
        assert a["gen_ai.agent.name"] == "scout"
        assert a["server.address"] == "127.0.0.1" and isinstance(a["server.port"], int)
        assert a["gen_ai.usage.input_tokens"] > 0 and a["gen_ai.usage.output_tokens"] > 0
        assert "gen_ai.usage.cache_read.input_tokens" in a
        assert "gen_ai.usage.cache_creation.input_tokens" in a
        assert len(a["gen_ai.response.finish_reasons"]) == 1
        assert not any(k in a for k in CONTENT)  # content is opt-in
    (lookup,) = _named(tree, "execute_tool lookup")
    a = dict(lookup.attributes or {})
    assert a["gen_ai.operation.name"] == "execute_tool" and a["gen_ai.tool.call.id"]
    assert a["gen_ai.conversation.id"] == result.session_id
    assert "gen_ai.tool.call.arguments" not in a and "gen_ai.tool.call.result" not in a
    assert dict(root.attributes or {})["gen_ai.conversation.id"] == result.session_id

    points = _points(reader)
    unit, durations = points["gen_ai.client.operation.duration"]
    assert unit == "s" and sum(p.count for p in durations) == 2
    assert {p.attributes["gen_ai.operation.name"] for p in durations} == {"chat"}
    assert {p.attributes["gen_ai.provider.name"] for p in durations} == {"anthropic"}
    unit, usage = points["gen_ai.client.token.usage"]
    assert unit == "{token}"
    by_type = {p.attributes["gen_ai.token.type"]: p for p in usage}
    assert set(by_type) == {"input", "output"}
    assert by_type["input"].count == by_type["output"].count == 2
    assert by_type["input"].sum == sum(c.attributes["gen_ai.usage.input_tokens"] for c in chats)
    assert all("gen_ai.system" not in p.attributes for _, ps in points.values() for p in ps)


async def test_message_content_only_when_asked_and_redacted(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    sim_server: SimulatorServer,
    sim_key: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    settings = load_settings()
    assert settings.otel_capture_message_content
    spans = InMemorySpanExporter()
    telemetry = setup_telemetry(
        TelemetrySettings(capture_content=settings.otel_capture_message_content),
        span_exporter=spans,
    )
    agent, _ = await _run_wake(
        temporal_dev, store, sim_server, sim_key, telemetry, text=f"my key is {SECRET}, check"
    )
    telemetry.shutdown()
    tree = _wake_spans(spans.get_finished_spans(), agent)
    first, second = sorted(_named(tree, "chat claude-sonnet-4-6"), key=lambda s: s.start_time)
    asked = json.loads(str(dict(first.attributes or {})["gen_ai.input.messages"]))
    assert asked[0]["role"] == "user"
    assert "[REDACTED:aws_access_key_id]" in json.dumps(asked)
    answered = json.loads(str(dict(first.attributes or {})["gen_ai.output.messages"]))
    assert answered[0]["role"] == "assistant"
    assert {p["type"] for p in answered[0]["parts"]} == {"text", "tool_call"}
    history = json.loads(str(dict(second.attributes or {})["gen_ai.input.messages"]))
    responses = [p for m in history for p in m["parts"] if p["type"] == "tool_call_response"]
    assert len(responses) == 2 and all(r["id"] and "result" in r for r in responses)
    assert any(p["type"] == "tool_call" for m in history for p in m["parts"])
    (lookup,) = _named(tree, "execute_tool lookup")
    a = dict(lookup.attributes or {})
    assert json.loads(str(a["gen_ai.tool.call.arguments"])) == {"host": "db1"}
    assert "[REDACTED:aws_access_key_id]" in str(a["gen_ai.tool.call.result"])
    # nowhere in any span does the secret appear
    for span in tree:
        for value in (span.attributes or {}).values():
            assert SECRET not in str(value), span.name


async def test_spans_go_to_the_global_provider_the_application_set(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    sim_server: SimulatorServer,
    sim_key: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    exporter, reader = user_global_providers()
    user_provider = trace.get_tracer_provider()
    # Asked to export too: the application's provider is kept, and a warning says so.
    telemetry = build_telemetry(load_settings(otel_exporter="console"))
    assert trace.get_tracer_provider() is user_provider
    assert "already set" in caplog.text
    agent, result = await _run_wake(temporal_dev, store, sim_server, sim_key, telemetry)
    tree = _wake_spans(exporter.get_finished_spans(), agent)
    (root,) = _named(tree, "invoke_agent scout")
    assert root.context.span_id == wake_ids(agent.tenant, result.wake_id)[1]
    chats = _named(tree, "chat claude-sonnet-4-6")
    assert len(chats) == 2
    assert all(c.parent is not None and c.parent.span_id == root.context.span_id for c in chats)
    assert _named(tree, "RunWorkflow:AgentWorkflow")
    points = _points(reader)
    assert "gen_ai.client.operation.duration" in points
    assert "gen_ai.client.token.usage" in points


def _python(code: str, env: dict[str, str] | None = None) -> str:
    """Run ``code`` in a fresh interpreter (global providers are set once per process),
    with ``env`` added to an environment without OpenTelemetry settings."""
    plain = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "WAKEFUL_OTEL_"))}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**plain, **(env or {})},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_an_exporter_is_installed_globally_only_when_no_provider_is_set() -> None:
    out = _python(
        """
        from opentelemetry import metrics, trace
        from opentelemetry.sdk.trace import TracerProvider
        from wakeful.errors import ConfigError
        from wakeful.telemetry import TelemetrySettings, install_telemetry
        from wakeful.worker.serve import build_telemetry
        from wakeful.worker.settings import load_settings

        try:
            build_telemetry(load_settings(otel_exporter="otlp", otel_endpoint=None))
        except ConfigError as exc:
            print("otlp_endpoint" in str(exc), len(str(exc).splitlines()))
        t = install_telemetry(TelemetrySettings(exporter="console", service_name="svc"))
        provider = trace.get_tracer_provider()
        print(type(provider).__name__, provider.resource.attributes["service.name"])
        print(type(metrics.get_meter_provider()).__name__)
        t.shutdown()
        """
    )
    assert out.split() == ["True", "1", "TracerProvider", "svc", "MeterProvider"]
    out = _python(
        """
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from wakeful.telemetry import TelemetrySettings, install_telemetry

        mine = TracerProvider()
        trace.set_tracer_provider(mine)
        install_telemetry(TelemetrySettings(exporter="console")).shutdown()
        print(trace.get_tracer_provider() is mine)
        """
    )
    assert out.split() == ["True"]
    # Both set (as opentelemetry-instrument does): nothing is built, so an exporter
    # setting meant for the application's own SDK (otlp, its default endpoint) is no error.
    out = _python(
        """
        from opentelemetry import metrics, trace
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.trace import TracerProvider
        from wakeful.telemetry import TelemetrySettings, install_telemetry

        spans, meters = TracerProvider(), MeterProvider()
        trace.set_tracer_provider(spans)
        metrics.set_meter_provider(meters)
        t = install_telemetry(TelemetrySettings(exporter="otlp"))
        print(t.enabled, trace.get_tracer_provider() is spans)
        print(metrics.get_meter_provider() is meters)
        """
    )
    assert out.split() == ["True", "True", "True"]


# A model call recorded by a worker's telemetry, then the exporters flushed (shutdown).
_RECORD_A_CALL = """
    from opentelemetry import metrics, trace
    from wakeful.providers.base import Usage
    from wakeful.worker.serve import build_telemetry
    from wakeful.worker.settings import load_settings

    t = build_telemetry(load_settings())
    with t.model_span("anthropic", "claude-sonnet-4-6") as span:
        t.record_model_call(
            provider="anthropic",
            model="claude-sonnet-4-6",
            usage=Usage(input_tokens=120, output_tokens=30),
            span=span,
        )
    t.shutdown()
    print("TRACER", type(trace.get_tracer_provider()).__name__)
    print("METER", type(metrics.get_meter_provider()).__name__)
"""


def _console_metrics(out: str) -> dict[str, list[dict[str, Any]]]:
    """The data points of each metric the console exporter printed (JSON documents)."""
    found: dict[str, list[dict[str, Any]]] = {}
    decoder, at = json.JSONDecoder(), out.find("{")
    while at >= 0:
        doc, end = decoder.raw_decode(out, at)
        for rm in doc.get("resource_metrics", []):
            for sm in rm["scope_metrics"]:
                for m in sm["metrics"]:
                    found.setdefault(m["name"], []).extend(m["data"]["data_points"])
        at = out.find("{", end)
    return found


def test_otel_metrics_exporter_installs_a_meter_provider_exporting_the_genai_histograms() -> None:
    """OTEL_METRICS_EXPORTER=console alone: a MeterProvider exporting to the console is
    installed (no tracer provider: spans were not asked for), and the GenAI client
    histograms arrive there; never over the application's own MeterProvider."""
    out = _python(_RECORD_A_CALL, env={"OTEL_METRICS_EXPORTER": "console"})
    tail = out[out.rindex("TRACER") :].split()
    assert tail == ["TRACER", "ProxyTracerProvider", "METER", "MeterProvider"]
    points = _console_metrics(out[: out.rindex("TRACER")])
    (duration,) = points["gen_ai.client.operation.duration"]
    assert duration["count"] == 1
    assert duration["attributes"]["gen_ai.operation.name"] == "chat"
    usage = {p["attributes"]["gen_ai.token.type"]: p for p in points["gen_ai.client.token.usage"]}
    assert (usage["input"]["sum"], usage["output"]["sum"]) == (120, 30)

    # OTEL_METRICS_EXPORTER=none keeps metrics out of the console exporter spans go to.
    out = _python(
        _RECORD_A_CALL, env={"OTEL_TRACES_EXPORTER": "console", "OTEL_METRICS_EXPORTER": "none"}
    )
    assert out[out.rindex("TRACER") :].split() == [
        "TRACER",
        "TracerProvider",
        "METER",
        "_ProxyMeterProvider",
    ]
    assert "gen_ai.client.token.usage" not in out and '"name": "chat claude' in out

    # The application's own MeterProvider is never replaced: Wakeful records to it.
    out = _python(
        """
        from opentelemetry import metrics
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from wakeful.providers.base import Usage
        from wakeful.worker.serve import build_telemetry
        from wakeful.worker.settings import load_settings

        reader = InMemoryMetricReader()
        mine = MeterProvider(metric_readers=[reader])
        metrics.set_meter_provider(mine)
        t = build_telemetry(load_settings())
        t.record_model_call(
            provider="anthropic", model="m", usage=Usage(input_tokens=5, output_tokens=1)
        )
        print(metrics.get_meter_provider() is mine)
        names = {
            m.name
            for rm in reader.get_metrics_data().resource_metrics
            for sm in rm.scope_metrics
            for m in sm.metrics
        }
        print("gen_ai.client.token.usage" in names)
        """,
        env={"OTEL_METRICS_EXPORTER": "console"},
    )
    assert out.split() == ["True", "True"]


def test_without_the_sdk_telemetry_records_nothing_and_export_says_what_to_install() -> None:
    out = _python(
        """
        import sys

        class NoSdk:
            def find_spec(self, name, path=None, target=None):
                if name == "opentelemetry.sdk" or name.startswith("opentelemetry.sdk."):
                    raise ImportError(name)

        sys.meta_path.insert(0, NoSdk())
        from wakeful.errors import ConfigError
        from wakeful.telemetry import Telemetry, TelemetrySettings, setup_telemetry

        t = Telemetry()
        with t.tool_span("x", "y") as span:
            pass
        print(t.enabled, span.is_recording())
        try:
            setup_telemetry(TelemetrySettings(exporter="console"))
        except ConfigError as exc:
            print(exc)
        """
    )
    first, second = out.strip().splitlines()
    assert first == "False False"
    assert "needs the OpenTelemetry SDK" in second and "wakeful[otlp]" in second


def test_retrieval_span_follows_the_conventions() -> None:
    spans = InMemorySpanExporter()
    quiet = setup_telemetry(TelemetrySettings(), span_exporter=spans)
    loud = setup_telemetry(TelemetrySettings(capture_content=True), span_exporter=spans)
    for t in (quiet, loud):
        with t.retrieval_span("scout", "wakeful.events", wake=("acme", "w-1"), query=SECRET):
            pass
    first, second = spans.get_finished_spans()
    assert first.name == "retrieval wakeful.events" and first.kind is trace.SpanKind.CLIENT
    a = dict(first.attributes or {})
    assert (a["gen_ai.operation.name"], a["gen_ai.data_source.id"]) == (
        "retrieval",
        "wakeful.events",
    )
    assert "gen_ai.retrieval.query.text" not in a
    assert dict(second.attributes or {})["gen_ai.retrieval.query.text"] == (
        "[REDACTED:aws_access_key_id]"
    )
    assert first.parent is not None and first.parent.span_id == wake_ids("acme", "w-1")[1]


def test_a_wakes_spans_join_the_current_trace_and_its_sampling() -> None:
    """Inside Temporal's activity span, a wake's spans are in that span's trace and follow
    its sampling decision (a trace the application's sampler dropped stays dropped)."""
    spans = InMemorySpanExporter()
    t = setup_telemetry(TelemetrySettings(), span_exporter=spans)
    for n, flags in enumerate((trace.TraceFlags.SAMPLED, trace.TraceFlags.DEFAULT)):
        activity = trace.SpanContext(
            0xABC + n, 0xDEF, is_remote=True, trace_flags=trace.TraceFlags(flags)
        )
        with trace.use_span(trace.NonRecordingSpan(activity)):
            with t.tool_span("ping", f"call-{n}", wake=("acme", "w-1")):
                pass
    (recorded,) = spans.get_finished_spans()
    assert recorded.context.trace_id == 0xABC
    assert recorded.parent is not None and recorded.parent.span_id == wake_ids("acme", "w-1")[1]
    assert [link.context.span_id for link in recorded.links] == [0xDEF]


def test_a_wake_scope_parents_temporals_spans_and_tells_the_root_where_it_hangs() -> None:
    """What Temporal's interceptor does, in one process: workflow code under the wake's
    scope starts an activity (its context goes out through the W3C propagator, as in
    Temporal's headers); the activity's span is under the wake's root, and the root the
    activity writes hangs under the span the workflow ran under."""
    spans = InMemorySpanExporter()
    t = setup_telemetry(TelemetrySettings(), span_exporter=spans)
    workflow = trace.SpanContext(
        0xABC, 0xDEF, is_remote=True, trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED)
    )
    headers: dict[str, str] = {}
    with trace.use_span(trace.NonRecordingSpan(workflow)):
        with wake_scope("acme", "w-1"):
            with t.tracer.start_as_current_span("StartActivity:wakeful.call_model"):
                propagate.inject(headers)
        assert trace.get_current_span().get_span_context() == workflow  # scope left
    with t.tracer.start_as_current_span(
        "RunActivity:wakeful.call_model", context=propagate.extract(headers)
    ):
        with t.tool_span("lookup", "call-1", wake=("acme", "w-1")):
            pass
        t.record_wake(
            tenant="acme",
            agent="scout",
            wake_id="w-1",
            started_at=datetime(2026, 1, 1, tzinfo=UTC),
            ended_at=datetime(2026, 1, 1, 0, 1, tzinfo=UTC),
            status="done",
        )
    by_name = {s.name: s for s in spans.get_finished_spans()}
    root, start = by_name["invoke_agent scout"], by_name["StartActivity:wakeful.call_model"]
    wake_span = wake_ids("acme", "w-1")[1]
    assert (root.context.trace_id, root.context.span_id) == (0xABC, wake_span)
    assert root.parent is not None and root.parent.span_id == 0xDEF
    assert start.parent is not None and start.parent.span_id == wake_span
    tool = by_name["execute_tool lookup"]
    assert tool.parent is not None and tool.parent.span_id == wake_span
    assert TRACESTATE_KEY not in root.context.trace_state  # not passed on below the root


def test_a_failed_model_call_has_its_error_type_on_span_and_duration() -> None:
    spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
    t = setup_telemetry(TelemetrySettings(), span_exporter=spans, metric_reader=reader)
    with (
        pytest.raises(ApplicationError),
        t.model_span("anthropic", "claude-sonnet-4-6", server=("api.example.com", 443)),
    ):
        raise ApplicationError("overloaded", type="ProviderError")
    (span,) = spans.get_finished_spans()
    a = dict(span.attributes or {})
    assert a["error.type"] == "ProviderError" and not span.status.is_ok
    assert (a["server.address"], a["server.port"]) == ("api.example.com", 443)
    (point,) = _points(reader)["gen_ai.client.operation.duration"][1]
    assert point.attributes["error.type"] == "ProviderError"
    assert point.attributes["server.address"] == "api.example.com"
