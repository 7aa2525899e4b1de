"""Where telemetry goes: the settings, and the SDK providers set up (or installed globally)
when an exporter is asked for."""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from opentelemetry import metrics, trace

from wakeful.errors import ConfigError

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics.export import MetricReader
    from opentelemetry.sdk.trace.export import SpanExporter


from wakeful.telemetry.recorder import Telemetry, is_unset

__all__ = ["TelemetrySettings", "install_telemetry", "setup_telemetry"]

log = logging.getLogger(__name__)

_NEEDS_SDK = (
    "telemetry export needs the OpenTelemetry SDK: pip install 'wakeful[otlp]' "
    "(or set no otel exporter and configure OpenTelemetry yourself)"
)


@dataclass(frozen=True)
class TelemetrySettings:
    """How telemetry leaves the process. Built by the worker; never read from env here."""

    service_name: str = "wakeful"
    """``service.name`` resource attribute."""
    exporter: Literal["none", "console", "otlp"] = "none"
    """Where spans go (and metrics, unless ``metrics_exporter`` says otherwise); ``none``
    sets up nothing (the global providers)."""
    metrics_exporter: Literal["none", "console", "otlp"] | None = None
    """Where metrics go (``OTEL_METRICS_EXPORTER``); None: where ``exporter`` sends spans."""
    otlp_endpoint: str | None = None
    """OTLP/HTTP base URL (e.g. ``http://127.0.0.1:4318``); required for ``otlp``."""
    metric_interval_seconds: float = 60.0
    """How often metrics are exported by the periodic reader."""
    capture_content: bool = False
    """Record message content (redacted) on the GenAI spans."""


def _metrics_kind(settings: TelemetrySettings) -> Literal["none", "console", "otlp"]:
    return settings.exporter if settings.metrics_exporter is None else settings.metrics_exporter


def _exporters(settings: TelemetrySettings) -> tuple[SpanExporter | None, MetricReader | None]:
    """The span exporter and metric reader ``settings`` ask for (None for ``none``)."""
    from opentelemetry.sdk.metrics.export import (
        ConsoleMetricExporter,
        MetricExporter,
        PeriodicExportingMetricReader,
    )
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter

    kinds = (settings.exporter, _metrics_kind(settings))
    spans: SpanExporter | None = None
    metric_exporter: MetricExporter | None = None
    if "otlp" in kinds:
        if not settings.otlp_endpoint:
            raise ConfigError(
                "telemetry exporter 'otlp' needs otlp_endpoint (OTEL_EXPORTER_OTLP_ENDPOINT, "
                "e.g. http://host:4318)"
            )
        try:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
                OTLPMetricExporter,
            )
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError as exc:
            raise ConfigError(
                "telemetry exporter 'otlp' needs the opentelemetry-exporter-otlp-proto-http "
                "package: pip install 'wakeful[otlp]', or use exporter='console'"
            ) from exc
        base = settings.otlp_endpoint.rstrip("/")
        if kinds[0] == "otlp":
            spans = OTLPSpanExporter(endpoint=base + "/v1/traces")
        if kinds[1] == "otlp":
            metric_exporter = OTLPMetricExporter(endpoint=base + "/v1/metrics")
    if kinds[0] == "console":
        spans = ConsoleSpanExporter()
    if kinds[1] == "console":
        metric_exporter = ConsoleMetricExporter()
    if metric_exporter is None:
        return spans, None
    return spans, PeriodicExportingMetricReader(
        metric_exporter, export_interval_millis=settings.metric_interval_seconds * 1000
    )


def _sdk_providers(
    settings: TelemetrySettings,
    span_exporter: SpanExporter | None = None,
    metric_reader: MetricReader | None = None,
) -> tuple[Any, Any]:
    """SDK tracer and meter providers per ``settings``, plus the given exporter/reader."""
    try:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    except ImportError as exc:
        raise ConfigError(_NEEDS_SDK) from exc
    resource = Resource.create({"service.name": settings.service_name})
    configured_spans, configured_metrics = _exporters(settings)
    tracer_provider = TracerProvider(resource=resource)
    if configured_spans is not None:
        tracer_provider.add_span_processor(BatchSpanProcessor(configured_spans))
    if span_exporter is not None:
        tracer_provider.add_span_processor(SimpleSpanProcessor(span_exporter))
    readers = [r for r in (configured_metrics, metric_reader) if r is not None]
    return tracer_provider, MeterProvider(resource=resource, metric_readers=readers)


def setup_telemetry(
    settings: TelemetrySettings,
    *,
    span_exporter: SpanExporter | None = None,
    metric_reader: MetricReader | None = None,
) -> Telemetry:
    """Private SDK providers per ``settings`` (not installed globally); explicit
    exporter/reader (tests) are added on top."""
    tracer_provider, meter_provider = _sdk_providers(settings, span_exporter, metric_reader)
    return Telemetry(
        tracer_provider,
        meter_provider,
        capture_content=settings.capture_content,
        owned=(tracer_provider, meter_provider),
    )


def install_telemetry(settings: TelemetrySettings) -> Telemetry:
    """Telemetry on the global providers. For each of spans (``exporter``) and metrics
    (``metrics_exporter``, else ``exporter``) sent somewhere, an SDK provider exporting there
    is installed as the global one first, unless the process already set its own: that is
    never replaced (Wakeful records to it, and a warning says so)."""
    plain = Telemetry(capture_content=settings.capture_content)
    wanted = {
        "TracerProvider": settings.exporter != "none",
        "MeterProvider": _metrics_kind(settings) != "none",
    }
    if not any(wanted.values()):
        return plain
    globals_: dict[str, object] = {
        "TracerProvider": trace.get_tracer_provider(),
        "MeterProvider": metrics.get_meter_provider(),
    }
    set_by_user = [
        kind for kind, provider in globals_.items() if wanted[kind] and not is_unset(provider)
    ]
    if set_by_user:
        log.warning(
            "a global OpenTelemetry %s is already set: Wakeful records to it and does not "
            "install its own for otel exporter %r",
            " and ".join(set_by_user),
            settings.exporter if "TracerProvider" in set_by_user else _metrics_kind(settings),
        )
    install = [kind for kind, want in wanted.items() if want and kind not in set_by_user]
    if not install:
        return plain  # nothing to install: not even the SDK is needed
    # Exporters only for what is installed (an otlp endpoint is needed only then).
    tracer_provider, meter_provider = _sdk_providers(
        dataclasses.replace(
            settings,
            exporter=settings.exporter if "TracerProvider" in install else "none",
            metrics_exporter=_metrics_kind(settings) if "MeterProvider" in install else "none",
        )
    )
    owned: list[object] = []
    if "TracerProvider" in install:
        trace.set_tracer_provider(tracer_provider)
        owned.append(tracer_provider)
    else:
        tracer_provider.shutdown()  # built but not used: stop its export thread
    if "MeterProvider" in install:
        metrics.set_meter_provider(meter_provider)
        owned.append(meter_provider)
    else:
        meter_provider.shutdown()
    return Telemetry(capture_content=settings.capture_content, owned=owned)
