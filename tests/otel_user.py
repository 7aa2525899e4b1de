"""Global OpenTelemetry providers set the way an application sets them (Langfuse, Logfire
and OTLP setups all call ``set_tracer_provider``), for tests of Wakeful recording to them.

A process sets its global providers once, so the first use sets them and later ones share
them (each test clears the span exporter and filters spans by its own trace)."""

from __future__ import annotations

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

_SET: list[tuple[TracerProvider, InMemorySpanExporter, InMemoryMetricReader]] = []


def user_global_providers() -> tuple[InMemorySpanExporter, InMemoryMetricReader]:
    """The application's global providers' span exporter (cleared) and metric reader."""
    if not _SET:
        assert type(trace.get_tracer_provider()).__name__ == "ProxyTracerProvider"
        provider, exporter = TracerProvider(), InMemorySpanExporter()
        reader = InMemoryMetricReader()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        _SET.append((provider, exporter, reader))
    provider, exporter, reader = _SET[0]
    assert trace.get_tracer_provider() is provider
    exporter.clear()
    return exporter, reader
