"""OpenTelemetry traces and metrics with the GenAI semantic conventions.

Nothing here reads the environment or installs global providers: the worker builds a
:class:`TelemetrySettings` from its own settings and passes it to :func:`setup_telemetry`,
which returns a :class:`Telemetry` object to hand to whoever records. Tests pass an
``InMemorySpanExporter`` / ``InMemoryMetricReader`` instead of an exporter.

Spans (names follow the conventions' ``{operation} {target}`` form):

* ``invoke_agent {agent}`` - one wake, its own trace: written when the wake ends, with the
  ids ``wake_trace`` derives from the wake, so the spans below (given ``wake=``) are its
  children whichever worker recorded them, and link to Temporal's activity span;
* ``wakeful.compile {agent}`` - one compile;
* ``chat {model}`` - one model call: ``gen_ai.system`` / ``gen_ai.provider.name``,
  ``gen_ai.request.model``, ``gen_ai.response.model``, ``gen_ai.usage.input_tokens`` (all
  input, cached included, as the conventions define it), ``gen_ai.usage.output_tokens``,
  ``gen_ai.usage.cache_read.input_tokens``, ``gen_ai.usage.cache_creation.input_tokens``,
  ``gen_ai.response.finish_reasons``, plus ``wakeful.cost_usd``;
* ``execute_tool {tool}`` - one tool run (``gen_ai.tool.name``, ``gen_ai.tool.call.id``).

Metrics: ``gen_ai.client.token.usage`` (histogram by ``gen_ai.token.type``),
``wakeful.cache.tokens`` (counter by ``wakeful.cache.kind``: uncached, read, write_5m,
write_1h), ``wakeful.cache.hit_ratio`` (histogram, read / all input, per call),
``wakeful.window.tokens`` (counter by ``wakeful.bucket``), ``wakeful.compile.evictions``
(counter by bucket and reason) and ``wakeful.cost`` (counter, USD).

The activities record through :class:`Telemetry`; ``Telemetry.disabled()`` (the default of
``ActivityDeps.telemetry``) records nothing and costs nothing. Wakes, activities and
workflow runs get Temporal's own spans from :meth:`Telemetry.tracing_interceptor`, which
the worker and client install; spans recorded without ``wake=`` nest under them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    ConsoleMetricExporter,
    MetricReader,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
)
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode

from wakeful.errors import ConfigError
from wakeful.providers.base import Usage
from wakeful.wake_trace import WakeIdGenerator, wake_context

if TYPE_CHECKING:
    from temporalio.contrib.opentelemetry import TracingInterceptor

    from wakeful.compiler import CompiledWindow

__all__ = ["Telemetry", "TelemetrySettings", "setup_telemetry"]

AttrValue = str | int | float | bool
WakeRef = tuple[str, str]  # (tenant, wake id): parents a span on that wake's root


@dataclass(frozen=True)
class TelemetrySettings:
    """How telemetry leaves the process. Built by the worker; never read from env here."""

    service_name: str = "wakeful"
    """``service.name`` resource attribute."""
    exporter: Literal["none", "console", "otlp"] = "none"
    """Where spans and metrics go; ``none`` records nothing beyond test readers."""
    otlp_endpoint: str | None = None
    """OTLP/HTTP base URL (e.g. ``http://127.0.0.1:4318``); required for ``otlp``."""
    metric_interval_seconds: float = 60.0
    """How often metrics are exported by the periodic reader."""


def _exporters(settings: TelemetrySettings) -> tuple[SpanExporter | None, MetricReader | None]:
    interval_ms = settings.metric_interval_seconds * 1000
    if settings.exporter == "none":
        return None, None
    if settings.exporter == "console":
        return ConsoleSpanExporter(), PeriodicExportingMetricReader(
            ConsoleMetricExporter(), export_interval_millis=interval_ms
        )
    if not settings.otlp_endpoint:
        raise ConfigError("telemetry exporter 'otlp' needs otlp_endpoint (e.g. http://host:4318)")
    try:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:
        raise ConfigError(
            "telemetry exporter 'otlp' needs the opentelemetry-exporter-otlp-proto-http "
            "package; install it or use exporter='console'"
        ) from exc
    base = settings.otlp_endpoint.rstrip("/")
    return OTLPSpanExporter(endpoint=base + "/v1/traces"), PeriodicExportingMetricReader(
        OTLPMetricExporter(endpoint=base + "/v1/metrics"), export_interval_millis=interval_ms
    )


class Telemetry:
    """Tracer, meter and the instruments Wakeful records into."""

    def __init__(
        self,
        tracer_provider: trace.TracerProvider,
        meter_provider: metrics.MeterProvider,
        *,
        enabled: bool = True,
    ) -> None:
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.enabled = enabled
        self.tracer = tracer_provider.get_tracer("wakeful")
        meter = meter_provider.get_meter("wakeful")
        self._token_usage = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Input and output tokens per model call.",
        )
        self._cache_tokens = meter.create_counter(
            "wakeful.cache.tokens",
            unit="{token}",
            description="Input tokens by cache outcome (uncached, read, write_5m, write_1h).",
        )
        self._hit_ratio = meter.create_histogram(
            "wakeful.cache.hit_ratio",
            unit="1",
            description="Share of a call's input tokens read from the prompt cache.",
        )
        self._window_tokens = meter.create_counter(
            "wakeful.window.tokens",
            unit="{token}",
            description="Tokens placed in compiled windows, by budget bucket.",
        )
        self._evictions = meter.create_counter(
            "wakeful.compile.evictions",
            unit="{block}",
            description="Blocks the compiler kept out of a window, by bucket and reason.",
        )
        self._cost = meter.create_counter(
            "wakeful.cost", unit="USD", description="Model spend at list prices."
        )

    @classmethod
    def disabled(cls) -> Telemetry:
        """Records nothing (OpenTelemetry's no-op providers): the activities' default."""
        return cls(trace.NoOpTracerProvider(), metrics.NoOpMeterProvider(), enabled=False)

    def tracing_interceptor(self) -> TracingInterceptor:
        """Temporal's OpenTelemetry interceptor on this tracer, for client and worker.

        It traces workflow runs, signals, updates and every activity, and carries the trace
        context into activities, so the spans recorded there nest under the workflow's.
        """
        from temporalio.contrib.opentelemetry import TracingInterceptor

        return TracingInterceptor(self.tracer)

    @contextmanager
    def _span(
        self,
        name: str,
        attributes: Mapping[str, AttrValue],
        kind: SpanKind,
        wake: WakeRef | None = None,
    ) -> Iterator[Span]:
        context: Context | None = None
        links: list[Link] = []
        if wake is not None:
            # Parent on the wake's root; keep the way back to Temporal's activity span.
            current = trace.get_current_span().get_span_context()
            if current.is_valid:
                links.append(Link(current))
            context = wake_context(*wake)
        with self.tracer.start_as_current_span(
            name,
            context=context,
            kind=kind,
            attributes=dict(attributes),
            links=links,
            record_exception=True,
            set_status_on_exception=True,
        ) as span:
            yield span

    def record_wake(
        self,
        *,
        tenant: str,
        agent: str,
        wake_id: str,
        started_at: datetime,
        ended_at: datetime,
        status: str,
        error: str = "",
        attributes: Mapping[str, AttrValue] | None = None,
    ) -> None:
        """Write a finished wake's root span (see ``wake_trace``): from ``started_at`` to
        ``ended_at``, with the ids its children were parented on. ``error`` (why a wake
        failed, e.g. parked or a refused model call) marks the span as an error."""
        if not self.enabled:
            return
        attrs: dict[str, AttrValue] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent,
            "wakeful.tenant": tenant,
            "wakeful.wake_id": wake_id,
            "wakeful.wake.status": status,
            **(attributes or {}),
        }
        with WakeIdGenerator.forcing(tenant, wake_id):
            span = self.tracer.start_span(
                f"invoke_agent {agent}",
                context=Context(),  # a root: its trace is the wake's
                kind=SpanKind.INTERNAL,
                attributes=attrs,
                start_time=_nanos(started_at),
            )
        if error:
            span.set_attribute("error.type", status)
            self.mark_error(span, error)
        span.end(end_time=max(_nanos(ended_at), _nanos(started_at)))

    def compile_span(
        self, agent: str, wake_id: str, *, tenant: str | None = None
    ) -> AbstractContextManager[Span]:
        return self._span(
            f"wakeful.compile {agent}",
            {"gen_ai.agent.name": agent, "wakeful.wake_id": wake_id},
            SpanKind.INTERNAL,
            (tenant, wake_id) if tenant is not None else None,
        )

    def model_span(
        self, provider: str, model: str, *, wake: WakeRef | None = None
    ) -> AbstractContextManager[Span]:
        return self._span(
            f"chat {model}",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.system": provider,
                "gen_ai.provider.name": provider,
                "gen_ai.request.model": model,
            },
            SpanKind.CLIENT,
            wake,
        )

    def tool_span(
        self, tool: str, call_id: str, *, wake: WakeRef | None = None
    ) -> AbstractContextManager[Span]:
        return self._span(
            f"execute_tool {tool}",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool,
                "gen_ai.tool.call.id": call_id,
            },
            SpanKind.INTERNAL,
            wake,
        )

    def record_model_call(
        self,
        *,
        provider: str,
        model: str,
        usage: Usage,
        cost_usd: float | None = None,
        stop_reason: str | None = None,
        span: Span | None = None,
    ) -> None:
        """Put usage on the model span (if given) and into the metrics."""
        if not self.enabled:
            return
        total = usage.total_input_tokens
        five = usage.cache_creation_5m_input_tokens
        hour = usage.cache_creation_1h_input_tokens
        unsplit = max(usage.cache_creation_input_tokens - five - hour, 0)
        if span is not None:
            span.set_attributes(
                {
                    "gen_ai.response.model": model,
                    "gen_ai.usage.input_tokens": total,
                    "gen_ai.usage.output_tokens": usage.output_tokens,
                    "gen_ai.usage.cache_read.input_tokens": usage.cache_read_input_tokens,
                    "gen_ai.usage.cache_creation.input_tokens": usage.cache_creation_input_tokens,
                }
            )
            if stop_reason:
                span.set_attribute("gen_ai.response.finish_reasons", [stop_reason])
            if cost_usd is not None:
                span.set_attribute("wakeful.cost_usd", cost_usd)
        base = {
            "gen_ai.operation.name": "chat",
            "gen_ai.system": provider,
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model,
        }
        self._token_usage.record(total, {**base, "gen_ai.token.type": "input"})
        self._token_usage.record(usage.output_tokens, {**base, "gen_ai.token.type": "output"})
        for kind, value in (
            ("uncached", usage.input_tokens),
            ("read", usage.cache_read_input_tokens),
            ("write_5m", five + unsplit),
            ("write_1h", hour),
        ):
            self._cache_tokens.add(value, {**base, "wakeful.cache.kind": kind})
        self._hit_ratio.record(usage.cache_read_input_tokens / total if total else 0.0, base)
        if cost_usd is not None:
            self._cost.add(cost_usd, base)

    def record_compile(self, window: CompiledWindow, *, agent: str, span: Span | None) -> None:
        """A compiled window: its size and hashes on the span, its tokens by bucket and
        the blocks it kept out (by bucket and reason) in the metrics."""
        if not self.enabled:
            return
        if span is not None:
            span.set_attributes(
                {
                    "gen_ai.request.model": window.model,
                    "gen_ai.provider.name": window.provider,
                    "wakeful.window.input_tokens": window.input_tokens,
                    "wakeful.window.hash": window.window_hash,
                    "wakeful.window.stable_prefix_hash": window.stable_prefix_hash,
                    "wakeful.window.breakpoints": len(window.breakpoints),
                }
            )
        self.record_window(window.tokens_by_bucket, agent=agent)
        out: Counter[tuple[str, str]] = Counter(
            (row.segment, row.reason) for row in window.ledger.rows if row.position < 0
        )
        out.update(
            (row.segment, "collapsed") for row in window.ledger.rows if row.status == "collapsed"
        )
        for (bucket, reason), count in sorted(out.items()):
            self.record_evictions(count, agent=agent, bucket=bucket, reason=reason)

    def record_tool(self, span: Span, *, is_error: bool, output: str) -> None:
        """A tool's outcome on its span: error or not, and the output's size. Never the
        output itself: tool output can hold secrets, and content capture is opt-in in the
        GenAI conventions."""
        if not self.enabled:
            return
        span.set_attributes(
            {"wakeful.tool.is_error": is_error, "wakeful.tool.output_chars": len(output)}
        )
        if is_error:
            span.set_attribute("error.type", "tool_error")
            self.mark_error(span, "the tool failed; its error was returned to the model")

    def record_window(self, buckets: Mapping[str, int], *, agent: str) -> None:
        """Tokens of one compiled window, by bucket (stable prefix, evidence, ...)."""
        if not self.enabled:
            return
        for bucket, tokens in sorted(buckets.items()):
            self._window_tokens.add(tokens, {"gen_ai.agent.name": agent, "wakeful.bucket": bucket})

    def record_evictions(self, count: int, *, agent: str, bucket: str, reason: str) -> None:
        if not self.enabled:
            return
        self._evictions.add(
            count, {"gen_ai.agent.name": agent, "wakeful.bucket": bucket, "wakeful.reason": reason}
        )

    @staticmethod
    def mark_error(span: Span, message: str) -> None:
        span.set_status(Status(StatusCode.ERROR, message))

    def shutdown(self) -> None:
        """Flush and stop exporters (call once, at worker shutdown)."""
        for provider in (self.tracer_provider, self.meter_provider):
            stop: Any = getattr(provider, "shutdown", None)
            if stop is not None:
                stop()


def setup_telemetry(
    settings: TelemetrySettings,
    *,
    span_exporter: SpanExporter | None = None,
    metric_reader: MetricReader | None = None,
) -> Telemetry:
    """Providers per ``settings``; explicit exporter/reader (tests) are added on top."""
    resource = Resource.create({"service.name": settings.service_name})
    configured_spans, configured_metrics = _exporters(settings)
    tracer_provider = TracerProvider(resource=resource, id_generator=WakeIdGenerator())
    if configured_spans is not None:
        tracer_provider.add_span_processor(BatchSpanProcessor(configured_spans))
    if span_exporter is not None:
        tracer_provider.add_span_processor(SimpleSpanProcessor(span_exporter))
    readers = [r for r in (configured_metrics, metric_reader) if r is not None]
    meter_provider = MeterProvider(resource=resource, metric_readers=readers)
    return Telemetry(tracer_provider, meter_provider)


def _nanos(at: datetime) -> int:
    return int(at.timestamp() * 1_000_000_000)
