"""Telemetry recorded through the SDK's in-memory exporter and reader."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from wakeful.errors import ConfigError
from wakeful.providers.base import Usage
from wakeful.telemetry import Telemetry, TelemetrySettings, setup_telemetry
from wakeful.wake_trace import wake_ids


@pytest.fixture
def telemetry() -> Iterator[tuple[Telemetry, InMemorySpanExporter, InMemoryMetricReader]]:
    spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
    t = setup_telemetry(
        TelemetrySettings(service_name="wakeful-test"), span_exporter=spans, metric_reader=reader
    )
    yield t, spans, reader
    t.shutdown()


def _points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()
    assert data is not None
    out: dict[str, list[Any]] = {}
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                out.setdefault(metric.name, []).extend(metric.data.data_points)
    return out


def test_model_call_span_carries_genai_attributes(
    telemetry: tuple[Telemetry, InMemorySpanExporter, InMemoryMetricReader],
) -> None:
    t, spans, _ = telemetry
    usage = Usage(
        input_tokens=50,
        output_tokens=20,
        cache_read_input_tokens=900,
        cache_creation_input_tokens=100,
        cache_creation_5m_input_tokens=100,
    )
    start = datetime(2026, 1, 1, tzinfo=UTC)
    with t.model_span("anthropic", "claude-sonnet-4-6", wake=("acme", "w-1")) as span:
        t.record_model_call(
            provider="anthropic",
            model="claude-sonnet-4-6",
            usage=usage,
            cost_usd=0.0012,
            stop_reason="end_turn",
            span=span,
        )
    t.record_wake(
        tenant="acme",
        agent="scout",
        wake_id="w-1",
        started_at=start,
        ended_at=start + timedelta(seconds=3),
        status="done",
    )
    model, wake = spans.get_finished_spans()
    assert model.name == "chat claude-sonnet-4-6" and wake.name == "invoke_agent scout"
    # the wake's root is written after its child, with the ids the child was parented on
    assert model.parent is not None and model.parent.span_id == wake.context.span_id
    assert model.context.trace_id == wake.context.trace_id and wake.parent is None
    assert (wake.end_time - wake.start_time) == 3_000_000_000
    attrs = dict(model.attributes or {})
    assert attrs["gen_ai.provider.name"] == "anthropic" and "gen_ai.system" not in attrs
    assert attrs["gen_ai.request.model"] == "claude-sonnet-4-6"
    assert attrs["gen_ai.usage.input_tokens"] == 1050
    assert attrs["gen_ai.usage.output_tokens"] == 20
    assert attrs["gen_ai.usage.cache_read.input_tokens"] == 900
    assert attrs["gen_ai.usage.cache_creation.input_tokens"] == 100
    assert attrs["wakeful.cost_usd"] == 0.0012


def test_metrics_cover_tokens_cache_cost_buckets_and_evictions(
    telemetry: tuple[Telemetry, InMemorySpanExporter, InMemoryMetricReader],
) -> None:
    t, _, reader = telemetry
    t.record_model_call(
        provider="openai",
        model="gpt-4o",
        usage=Usage(input_tokens=100, output_tokens=10, cache_read_input_tokens=300),
        cost_usd=0.5,
    )
    t.record_window({"stable_prefix": 1200, "evidence": 300}, agent="scout")
    t.record_evictions(3, agent="scout", bucket="retrieval", reason="superseded")
    points = _points(reader)
    by_kind = {p.attributes["wakeful.cache.kind"]: p.value for p in points["wakeful.cache.tokens"]}
    assert by_kind == {"uncached": 100, "read": 300, "write_5m": 0, "write_1h": 0}
    (ratio,) = points["wakeful.cache.hit_ratio"]
    assert ratio.sum == pytest.approx(0.75)
    assert {
        p.attributes["gen_ai.token.type"]: p.sum for p in points["gen_ai.client.token.usage"]
    } == {"input": 400, "output": 10}
    assert {p.attributes["wakeful.bucket"]: p.value for p in points["wakeful.window.tokens"]} == {
        "stable_prefix": 1200,
        "evidence": 300,
    }
    assert points["wakeful.compile.evictions"][0].value == 3
    assert points["wakeful.cost"][0].value == pytest.approx(0.5)


def test_tool_span_and_error_status(
    telemetry: tuple[Telemetry, InMemorySpanExporter, InMemoryMetricReader],
) -> None:
    t, spans, _ = telemetry
    with pytest.raises(RuntimeError), t.tool_span("read_file", "toolu_1"):
        raise RuntimeError("disk gone")
    (span,) = spans.get_finished_spans()
    assert span.name == "execute_tool read_file"
    assert dict(span.attributes or {})["gen_ai.tool.call.id"] == "toolu_1"
    assert not span.status.is_ok


def test_otlp_without_endpoint_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="otlp_endpoint"):
        setup_telemetry(TelemetrySettings(exporter="otlp"))


def test_each_wake_is_its_own_trace_whichever_process_records_its_spans() -> None:
    """Two workers (two providers) record the spans of two wakes; the roots, written last
    by a third, are the parents of exactly their own wake's spans."""
    exporters = [InMemorySpanExporter() for _ in range(3)]
    workers = [setup_telemetry(TelemetrySettings(), span_exporter=e) for e in exporters]
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for n, wake in enumerate(("w-1", "w-2")):
        with workers[n].compile_span("scout", wake, tenant="acme"):
            pass
        with workers[1 - n].tool_span("ping", f"call-{n}", wake=("acme", wake)):
            pass
    for wake, error in (("w-1", ""), ("w-2", "compile failed: BudgetError")):
        workers[2].record_wake(
            tenant="acme",
            agent="scout",
            wake_id=wake,
            started_at=start,
            ended_at=start + timedelta(seconds=1),
            status="parked" if error else "done",
            error=error,
        )
    spans = [s for e in exporters for s in e.get_finished_spans()]
    roots = {s.attributes["wakeful.wake_id"]: s for s in spans if s.parent is None}
    assert set(roots) == {"w-1", "w-2"}
    for wake, root in roots.items():
        children = [
            s for s in spans if s.parent is not None and s.context.trace_id == root.context.trace_id
        ]
        assert len(children) == 2
        assert all(c.parent.span_id == root.context.span_id for c in children)  # type: ignore[union-attr]
        assert (root.context.trace_id, root.context.span_id) == wake_ids("acme", wake)
    assert roots["w-1"].status.is_ok and not roots["w-2"].status.is_ok
    assert roots["w-2"].attributes["error.type"] == "parked"
    # the forced ids are used once: a span started afterwards gets fresh ones
    with workers[2].compile_span("scout", "w-9") as later:
        pass
    assert later.get_span_context().span_id not in {r.context.span_id for r in roots.values()}
    for w in workers:
        w.shutdown()
