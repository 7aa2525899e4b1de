"""The recorder: :class:`Telemetry`, the spans and metrics the activities record."""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, NonRecordingSpan, Span, SpanKind, Status, StatusCode

from wakeful.errors import ConfigError
from wakeful.providers.base import ModelReply, Usage
from wakeful.redaction import RedactionPolicy, default_policy
from wakeful.telemetry.genai import input_messages, output_messages, system_instructions
from wakeful.wake_trace import (
    WakeIdGenerator,
    adopt_wake_ids,
    root_parent,
    tool_call_ids,
    wake_context,
    wake_ids,
)

if TYPE_CHECKING:
    from temporalio.contrib.opentelemetry import TracingInterceptor

    from wakeful.compiler import CompiledWindow

__all__ = ["Telemetry"]

log = logging.getLogger(__name__)

AttrValue = str | int | float | bool | Sequence[str]
WakeRef = tuple[str, str]  # (tenant, wake id): parents a span on that wake's root
SCOPE = "wakeful"
try:
    _VERSION = version("wakeful")
except PackageNotFoundError:  # pragma: no cover - run from a source tree
    _VERSION = ""
# Bucket bounds the GenAI conventions advise for the two client histograms.
_DURATION_BUCKETS = tuple(0.01 * 2**n for n in range(14))  # 0.01 s ... 81.92 s
_TOKEN_BUCKETS = tuple(float(4**n) for n in range(14))  # 1 ... 67108864 tokens


class Telemetry:
    """Tracer, meter and the instruments Wakeful records into.

    Without providers it uses the global ones (``trace.get_tracer``/``metrics.get_meter``):
    spans go wherever the process sends OpenTelemetry's, even to a provider set later.
    """

    def __init__(
        self,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        *,
        enabled: bool = True,
        capture_content: bool = False,
        redaction: RedactionPolicy | None = None,
        owned: Sequence[object] = (),
    ) -> None:
        self._tracer_provider = tracer_provider
        self._meter_provider = meter_provider
        self._enabled = enabled
        self.capture_content = capture_content
        self.redaction = redaction if redaction is not None else default_policy()
        self._owned = list(owned)  # providers this object set up, shut down with it
        self.tracer = trace.get_tracer(SCOPE, _VERSION, tracer_provider=tracer_provider)
        meter = metrics.get_meter(SCOPE, _VERSION, meter_provider=meter_provider)
        self._duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        )
        self._token_usage = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
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

    @property
    def enabled(self) -> bool:
        """Whether anything records: given providers, or global ones that someone set
        (until then the API's are no-ops, and the work of recording is skipped)."""
        if not self._enabled:
            return False
        if self._tracer_provider is not None or self._meter_provider is not None:
            return True
        return not (
            is_unset(trace.get_tracer_provider()) and is_unset(metrics.get_meter_provider())
        )

    @classmethod
    def disabled(cls) -> Telemetry:
        """Records nothing (OpenTelemetry's no-op providers)."""
        return cls(trace.NoOpTracerProvider(), metrics.NoOpMeterProvider(), enabled=False)

    def tracing_interceptor(self) -> TracingInterceptor:
        """Temporal's OpenTelemetry interceptor on this tracer, for client and worker.

        It traces workflow runs, signals, updates and every activity, and carries the trace
        context into activities, so the spans recorded there are in the workflow's trace.
        """
        try:  # temporalio's OpenTelemetry module imports the SDK
            from temporalio.contrib.opentelemetry import TracingInterceptor
        except ImportError as exc:
            raise ConfigError(
                "tracing Temporal's workflows and activities needs the OpenTelemetry SDK: "
                "pip install 'wakeful[otlp]'"
            ) from exc
        return TracingInterceptor(self.tracer)

    def _content(self, value: Any) -> str:
        """``value`` as the JSON the conventions record, with secrets redacted."""
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        return self.redaction.redact(text).text

    @contextmanager
    def _span(
        self,
        name: str,
        attributes: Mapping[str, AttrValue],
        kind: SpanKind,
        wake: WakeRef | None = None,
        *,
        make_current: bool = True,
    ) -> Iterator[Span]:
        """A span of ``name``; on ``wake``'s root when given. ``make_current=False``: not made
        the current span, so the spans started within it keep their parent and link."""
        context: Context | None = None
        links: list[Link] = []
        if wake is not None:
            # Parent on the wake's root, in the trace of Temporal's activity span (one tree
            # with the workflow), and keep a link to that activity span.
            current = trace.get_current_span().get_span_context()
            if current.is_valid:
                links.append(Link(current))
            context = wake_context(*wake, within=current)
        if not make_current:
            span = self.tracer.start_span(
                name, context=context, kind=kind, attributes=dict(attributes), links=links
            )
            try:
                yield span
            except BaseException as exc:
                span.record_exception(exc)
                self.mark_error(span, f"{type(exc).__name__}: {exc}")
                raise
            finally:
                span.end()
            return
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

    def _wake_tracer(self) -> trace.Tracer:
        """The tracer to write a wake's root with, made to hand out its derived ids.

        The global proxy tracer resolves to the provider's own tracer for Wakeful's scope
        (the SDK keeps one per scope), so that one is asked for here."""
        provider = self._tracer_provider or trace.get_tracer_provider()
        tracer = provider.get_tracer(SCOPE, _VERSION)
        if not adopt_wake_ids(tracer):
            log.debug("the tracer provider takes no id generator; wake roots get random ids")
        return tracer

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
        conversation_id: str = "",
        attributes: Mapping[str, AttrValue] | None = None,
    ) -> None:
        """Write a finished wake's ``invoke_agent`` span (see ``wake_trace``): from
        ``started_at`` to ``ended_at``, with the span id its children were parented on,
        under the span its workflow ran under (see ``wake_trace.wake_scope``). ``error``
        (why a wake failed, e.g. parked or a refused model call) marks the span as an
        error."""
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
        if conversation_id:
            attrs["gen_ai.conversation.id"] = conversation_id
        ids = wake_ids(tenant, wake_id)
        self._write_span(
            f"invoke_agent {agent}",
            ids,
            self._root_parent(),
            attrs,
            started_at,
            ended_at,
            (status, error) if error else None,
        )

    def record_delegation(
        self,
        *,
        tenant: str,
        agent: str,
        wake_id: str,
        call_id: str,
        child: str,
        status: str,
        started_at: datetime,
        ended_at: datetime,
        error: str = "",
        conversation_id: str = "",
    ) -> None:
        """Write the ``execute_tool delegate`` span of a ``delegate`` call the workflow ran
        as a child workflow, under the wake's root, with the span id the child workflow
        was started under (``wake_trace.tool_scope``): the child's spans are beneath it."""
        if not self.enabled:
            return
        attrs: dict[str, AttrValue] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "delegate",
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.type": "function",
            "gen_ai.agent.name": agent,
            "wakeful.wake_id": wake_id,
            "wakeful.child": child,
            "wakeful.child.status": status,
        }
        if conversation_id:
            attrs["gen_ai.conversation.id"] = conversation_id
        current = trace.get_current_span().get_span_context()
        self._write_span(
            "execute_tool delegate",
            tool_call_ids(tenant, wake_id, call_id),
            wake_context(tenant, wake_id, within=current),
            attrs,
            started_at,
            ended_at,
            (status, error) if status != "ok" else None,
        )

    def _root_parent(self) -> Context | None:
        """Where a span written after the fact hangs: the parent its workflow scope put in
        the current (activity) span's ``tracestate``; else the current span itself; else
        nowhere (a root in its derived trace)."""
        current = trace.get_current_span().get_span_context()
        parent = root_parent(current)
        if parent is not None:
            return trace.set_span_in_context(NonRecordingSpan(parent))
        return None if current.is_valid else Context()

    def _write_span(
        self,
        name: str,
        ids: tuple[int, int],
        parent: Context | None,
        attrs: Mapping[str, AttrValue],
        started_at: datetime,
        ended_at: datetime,
        error: tuple[str, str] | None,
    ) -> None:
        """A finished span with the given (derived) ids, from ``started_at`` to ``ended_at``;
        ``error`` is (``error.type``, description)."""
        tracer = self._wake_tracer()
        with WakeIdGenerator.forcing_ids(ids):
            span = tracer.start_span(
                name,
                context=parent,
                kind=SpanKind.INTERNAL,
                attributes=dict(attrs),
                start_time=_nanos(started_at),
            )
        if error is not None:
            span.set_attribute("error.type", error[0])
            self.mark_error(span, error[1])
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

    def compile_stage_span(
        self, stage: str, agent: str, wake_id: str, *, tenant: str
    ) -> AbstractContextManager[Span]:
        """One stage of a compile (``wakeful.compile.{stage}``: prepare_wake, load_snapshot,
        classify_goal, ask_query_sources, compile, record), so each stage's time shows.

        On the wake's root beside the spans started within the stage (``wakeful.compile``,
        ``retrieval``), which it is not made the parent of: they stay children of the
        root, linked to Temporal's activity span, as every Wakeful span of a wake is."""
        return self._span(
            f"wakeful.compile.{stage}",
            {"gen_ai.agent.name": agent, "wakeful.wake_id": wake_id},
            SpanKind.INTERNAL,
            (tenant, wake_id),
            make_current=False,
        )

    def retrieval_span(
        self, agent: str, data_source: str, *, wake: WakeRef | None = None, query: str = ""
    ) -> AbstractContextManager[Span]:
        """Retrieval of stored events for a window (operation ``retrieval``)."""
        attrs: dict[str, AttrValue] = {
            "gen_ai.operation.name": "retrieval",
            "gen_ai.data_source.id": data_source,
            "gen_ai.agent.name": agent,
        }
        if self.capture_content and query:
            attrs["gen_ai.retrieval.query.text"] = self._content(query)
        return self._span(f"retrieval {data_source}", attrs, SpanKind.CLIENT, wake)

    @contextmanager
    def model_span(
        self,
        provider: str,
        model: str,
        *,
        wake: WakeRef | None = None,
        agent: str = "",
        conversation_id: str = "",
        server: tuple[str, int | None] = ("", None),
        request: Mapping[str, Any] | None = None,
    ) -> Iterator[Span]:
        """A ``chat`` span around one model call; records its duration metric on exit
        (with ``error.type`` when the call raised)."""
        attrs: dict[str, AttrValue] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model,
        }
        host, port = server
        if host:
            attrs["server.address"] = host
            if port is not None:
                attrs["server.port"] = port
        metric_attrs = dict(attrs)
        if agent:
            attrs["gen_ai.agent.name"] = agent
        if conversation_id:
            attrs["gen_ai.conversation.id"] = conversation_id
        if self.capture_content and request is not None:
            attrs["gen_ai.input.messages"] = self._content(input_messages(request))
            system = system_instructions(request)
            if system:
                attrs["gen_ai.system_instructions"] = self._content(system)
        began = time.perf_counter()
        try:
            with self._span(f"chat {model}", attrs, SpanKind.CLIENT, wake) as span:
                try:
                    yield span
                except BaseException as exc:
                    # Temporal's ApplicationError carries the failure's own type name.
                    error = getattr(exc, "type", None) or type(exc).__qualname__
                    span.set_attribute("error.type", str(error))
                    metric_attrs["error.type"] = str(error)
                    raise
        finally:
            if self.enabled:
                self._duration.record(time.perf_counter() - began, metric_attrs)

    def tool_span(
        self,
        tool: str,
        call_id: str,
        *,
        wake: WakeRef | None = None,
        agent: str = "",
        conversation_id: str = "",
        arguments: Any = None,
    ) -> AbstractContextManager[Span]:
        attrs: dict[str, AttrValue] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.type": "function",
        }
        if agent:
            attrs["gen_ai.agent.name"] = agent
        if conversation_id:
            attrs["gen_ai.conversation.id"] = conversation_id
        if self.capture_content and arguments is not None:
            attrs["gen_ai.tool.call.arguments"] = self._content(arguments)
        return self._span(f"execute_tool {tool}", attrs, SpanKind.INTERNAL, wake)

    def record_model_call(
        self,
        *,
        provider: str,
        model: str,
        usage: Usage,
        cost_usd: float | None = None,
        stop_reason: str | None = None,
        span: Span | None = None,
        reply: ModelReply | None = None,
        request_model: str = "",
        server: tuple[str, int | None] = ("", None),
    ) -> None:
        """Put usage (and, with ``reply``, its id and, if captured, its content) on the
        model span (if given) and into the metrics."""
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
            response_id = reply.raw.get("id") if reply is not None else None
            if isinstance(response_id, str) and response_id:
                span.set_attribute("gen_ai.response.id", response_id)
            if reply is not None and self.capture_content:
                span.set_attribute("gen_ai.output.messages", self._content(output_messages(reply)))
        base: dict[str, AttrValue] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": request_model or model,
            "gen_ai.response.model": model,
        }
        host, port = server
        if host:
            base["server.address"] = host
            if port is not None:
                base["server.port"] = port
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
        """A tool's outcome on its span: error or not, and the output's size; the output
        itself (redacted) only with ``capture_content``, as the GenAI conventions make
        content capture opt-in."""
        if not self.enabled:
            return
        span.set_attributes(
            {"wakeful.tool.is_error": is_error, "wakeful.tool.output_chars": len(output)}
        )
        if self.capture_content:
            span.set_attribute("gen_ai.tool.call.result", self._content(output))
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
        """Flush and stop the exporters this object set up (call once, at worker
        shutdown); providers it did not create (the user's global ones) are left alone."""
        for provider in self._owned:
            stop: Any = getattr(provider, "shutdown", None)
            if stop is not None:
                stop()


def is_unset(provider: object) -> bool:
    """Whether a global provider is still the API's default proxy (nobody set one)."""
    return type(provider).__name__ in ("ProxyTracerProvider", "_ProxyMeterProvider")


def _nanos(at: datetime) -> int:
    return int(at.timestamp() * 1_000_000_000)
