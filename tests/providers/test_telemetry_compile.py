"""What the activities record: compiled windows, tools, and the disabled default."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.compiler.factory import base_blocks, block, snapshot
from tests.compiler.helpers import compile_
from wakeful.compiler import BlockKind
from wakeful.providers.base import Usage
from wakeful.telemetry import Telemetry, TelemetrySettings, setup_telemetry
from wakeful.worker.serve import build_telemetry
from wakeful.worker.settings import load_settings

Recorded = tuple[Telemetry, InMemorySpanExporter, InMemoryMetricReader]


@pytest.fixture
def recorded() -> Iterator[Recorded]:
    spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
    t = setup_telemetry(TelemetrySettings(), span_exporter=spans, metric_reader=reader)
    yield t, spans, reader
    t.shutdown()


def _points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()
    out: dict[str, list[Any]] = {}
    if data is None:
        return out
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                out.setdefault(metric.name, []).extend(metric.data.data_points)
    return out


def test_a_compile_records_its_window_buckets_and_what_it_kept_out(recorded: Recorded) -> None:
    t, spans, reader = recorded
    blocks = [
        *base_blocks(),
        block("ret-dup", BlockKind.RETRIEVED, "Runbook: rotate logs.", seq=9),  # a duplicate
        block(
            "res-call",
            BlockKind.TOOL_CALL,
            "",
            seq=15,
            tool_call_id="r1",
            tool_name="grep",
            tool_input={"q": "x"},
        ),
        block(
            "res-result",
            BlockKind.TOOL_RESULT,
            "ERROR: grep exploded\n" + "trace line\n" * 200,
            seq=16,
            tool_call_id="r1",
            tool_name="grep",
            is_error=True,
            resolved=True,
        ),
    ]
    window = compile_(snapshot(blocks))
    with t.compile_span("triage", "wake-7") as span:
        t.record_compile(window, agent="triage", span=span)
    (finished,) = spans.get_finished_spans()
    attrs = dict(finished.attributes or {})
    assert finished.name == "wakeful.compile triage"
    assert attrs["wakeful.window.input_tokens"] == window.input_tokens
    assert attrs["wakeful.window.stable_prefix_hash"] == window.stable_prefix_hash
    assert attrs["gen_ai.request.model"] == window.model
    points = _points(reader)
    by_bucket = {p.attributes["wakeful.bucket"]: p.value for p in points["wakeful.window.tokens"]}
    assert by_bucket == {k: v for k, v in window.tokens_by_bucket.items()}
    out = {
        (p.attributes["wakeful.bucket"], p.attributes["wakeful.reason"]): p.value
        for p in points["wakeful.compile.evictions"]
    }
    assert out[("evidence", "duplicate")] == 1
    assert out[("recent", "collapsed")] == 1


def test_a_failed_tool_marks_its_span_without_recording_its_output(recorded: Recorded) -> None:
    t, spans, _ = recorded
    secret = "ValueError: password=hunter2 rejected"
    with t.tool_span("login", "toolu_9") as span:
        t.record_tool(span, is_error=True, output=secret)
    with t.tool_span("ping", "toolu_10") as span:
        t.record_tool(span, is_error=False, output="pong")
    failed, ok = spans.get_finished_spans()
    assert not failed.status.is_ok and ok.status.is_ok
    assert dict(failed.attributes or {})["error.type"] == "tool_error"
    assert dict(ok.attributes or {})["wakeful.tool.output_chars"] == 4
    everything = repr([(s.attributes, s.status.description, s.events) for s in (failed, ok)])
    assert "hunter2" not in everything


def test_disabled_telemetry_records_nothing_and_accepts_every_call() -> None:
    t = Telemetry.disabled()
    assert not t.enabled
    window = compile_(snapshot())
    with t.compile_span("a", "w") as span:
        t.record_compile(window, agent="a", span=span)
    with t.model_span("anthropic", "m") as span:
        t.record_model_call(provider="anthropic", model="m", usage=Usage(), span=span)
    with t.tool_span("x", "y") as span:
        t.record_tool(span, is_error=True, output="e")
    assert not span.is_recording()
    t.shutdown()


def test_the_worker_builds_telemetry_from_its_settings() -> None:
    before = trace.get_tracer_provider()
    build_telemetry(load_settings(otel_exporter="none"))  # records to the global providers
    assert trace.get_tracer_provider() is before
    # (otlp without an endpoint, in a process with no global provider: test_telemetry_genai)
    interceptor = setup_telemetry(TelemetrySettings()).tracing_interceptor()
    from temporalio.client import Interceptor as ClientInterceptor
    from temporalio.worker import Interceptor as WorkerInterceptor

    assert isinstance(interceptor, ClientInterceptor)
    assert isinstance(interceptor, WorkerInterceptor)
