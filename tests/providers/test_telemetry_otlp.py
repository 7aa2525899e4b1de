"""The OTLP exporter, for real: spans and metrics POSTed to a loopback collector stand-in."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from wakeful.providers.base import Usage
from wakeful.telemetry import TelemetrySettings, setup_telemetry

Received = list[tuple[str, str, bytes]]


@pytest.fixture
def collector() -> Iterator[tuple[str, Received]]:
    received: Received = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            received.append((self.path, self.headers.get("Content-Type", ""), body))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()


def test_spans_and_metrics_reach_an_otlp_http_endpoint(collector: tuple[str, Received]) -> None:
    endpoint, received = collector
    telemetry = setup_telemetry(
        TelemetrySettings(service_name="wakeful-otlp", exporter="otlp", otlp_endpoint=endpoint)
    )
    with telemetry.model_span("anthropic", "claude-sonnet-4-6", wake=("acme", "w-1")) as span:
        telemetry.record_model_call(
            provider="anthropic",
            model="claude-sonnet-4-6",
            usage=Usage(input_tokens=10, output_tokens=5, cache_read_input_tokens=90),
            cost_usd=0.001,
            span=span,
        )
    telemetry.shutdown()  # flushes the batch processor and the periodic metric reader

    traces = [body for path, kind, body in received if path == "/v1/traces"]
    metrics = [body for path, kind, body in received if path == "/v1/metrics"]
    assert traces and metrics
    assert {kind for _, kind, _ in received} == {"application/x-protobuf"}
    request = ExportTraceServiceRequest.FromString(traces[0])
    spans = [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
    assert [s.name for s in spans] == ["chat claude-sonnet-4-6"]
    attrs = {a.key: a.value for a in spans[0].attributes}
    assert attrs["gen_ai.usage.cache_read.input_tokens"].int_value == 90
    resource = {a.key: a.value.string_value for a in request.resource_spans[0].resource.attributes}
    assert resource["service.name"] == "wakeful-otlp"
    exported = ExportMetricsServiceRequest.FromString(metrics[-1])
    names = {
        m.name for rm in exported.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
    }
    assert {"gen_ai.client.token.usage", "wakeful.cache.hit_ratio", "wakeful.cost"} <= names
