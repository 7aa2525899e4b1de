"""One tree per wake, whose ``invoke_agent`` span is written when the wake ends.

A wake spans several activities, possibly on several workers and across worker restarts,
and the workflow code that drives it may not do I/O — so no process holds a wake's span
open from start to finish. Instead the wake's root span id is *derived* from
``(tenant, wake_id)``: every activity of the wake parents its spans (compile, model call,
tool) on that span id, and the activity that finishes the wake writes the ``invoke_agent``
span itself, with that very id, its recorded start time and the end time. Backends
assemble the tree whatever order the spans arrive in.

The trace id is the one of the Temporal span the activity runs in (Temporal's tracing
interceptor carries the workflow's trace into each activity), so workflow, activity and
GenAI spans are one trace; an activity with no current span uses a trace id derived from
the wake as well, the same in every process.

Where the ``invoke_agent`` span hangs: the workflow code of a wake runs under
:func:`wake_scope`, which makes the wake's root the current span there (a context computed
from the workflow's own trace context and the wake id: no I/O, the same on replay). Temporal's
tracing interceptor parents every span it starts from workflow code on the current context,
so the wake's ``StartActivity``/``RunActivity`` spans (and, under a delegation's
:func:`tool_scope`, ``StartChildWorkflow`` and the whole child workflow) are the wake's
descendants. The root's own parent is the span the workflow runs under (the one Temporal's
``RunWorkflow``/``HandleUpdate`` spans hang from: the client's start or update, or the parent
workflow's ``StartChildWorkflow``). It cannot be ``RunWorkflow`` itself: the interceptor
makes that span outside the workflow (an extern call skipped on replay) with a random id
that never reaches workflow code or its history. The activity that writes the root learns
that parent from the ``tracestate`` entry :data:`TRACESTATE_KEY` the scope puts on the
context (the parent's span id, 16 hex digits: 42 bytes more in each traced activity's
header in the history), which the W3C propagator carries through Temporal's headers and
the SDK copies from parent to child spans.

The ids are a hash, so they are the same in every process and after a retry; OpenTelemetry
requires only that they be unique and non-zero, which a 128/64-bit hash of a unique wake id
is (with overwhelming probability). A tracer is asked for ids only when a span starts, so
:class:`WakeIdGenerator` hands out the derived ids exactly once, for the root span, and
otherwise those of the generator it wraps (the SDK's random one, or a user's own).

This module needs only the OpenTelemetry API: the generator is duck-typed to the SDK's
``IdGenerator`` (``generate_trace_id``, ``generate_span_id``, ``is_trace_id_random``).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from contextvars import ContextVar
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, TraceState

__all__ = [
    "TRACESTATE_KEY",
    "WakeIdGenerator",
    "adopt_wake_ids",
    "root_parent",
    "tool_call_ids",
    "tool_scope",
    "wake_context",
    "wake_ids",
    "wake_scope",
]

TRACESTATE_KEY = "wakeful"
"""``tracestate`` key of the span id a wake's root hangs under (16 hex digits)."""

_FORCED: ContextVar[tuple[int, int] | None] = ContextVar("wakeful_forced_ids", default=None)


def wake_ids(tenant: str, wake_id: str) -> tuple[int, int]:
    """(trace id, root span id) of a wake: stable across processes and retries."""
    digest = hashlib.blake2b(f"{tenant}\x00{wake_id}".encode(), digest_size=24).digest()
    trace_id = int.from_bytes(digest[:16], "big") or 1
    span_id = int.from_bytes(digest[16:], "big") or 1
    return trace_id, span_id


def tool_call_ids(tenant: str, wake_id: str, call_id: str) -> tuple[int, int]:
    """(trace id, span id) of a tool call of a wake handled by the workflow itself (a
    delegation): its ``execute_tool`` span is written by an activity, after the fact."""
    return wake_ids(tenant, f"{wake_id}\x00tool\x00{call_id}")


def wake_context(tenant: str, wake_id: str, within: SpanContext | None = None) -> Context:
    """A context whose current span is the wake's root (remote: it is written elsewhere),
    in the trace of ``within`` (and sampled as it is), else in the wake's derived trace."""
    trace_id, span_id = wake_ids(tenant, wake_id)
    flags = TraceFlags(TraceFlags.SAMPLED)
    if within is not None and within.is_valid:
        trace_id, flags = within.trace_id, within.trace_flags
    parent = SpanContext(trace_id, span_id, is_remote=True, trace_flags=flags)
    return trace.set_span_in_context(NonRecordingSpan(parent))


@contextmanager
def _scope(span_id: int, *, mark: bool) -> Iterator[None]:
    """Make ``span_id`` (a span written elsewhere) the current span, as a child of the
    current one, for the code in the block; with ``mark``, tell the activities started in
    it (through ``tracestate``) which span that is, else drop an outer scope's mark. Nothing
    when there is no current span (a workflow started without tracing): the interceptor
    then starts no spans either."""
    current = trace.get_current_span().get_span_context()
    if not current.is_valid:
        yield
        return
    state = current.trace_state
    if TRACESTATE_KEY in state:
        state = state.delete(TRACESTATE_KEY)
    if mark:
        state = state.add(TRACESTATE_KEY, f"{current.span_id:016x}")
    scoped = SpanContext(
        current.trace_id,
        span_id,
        is_remote=True,
        trace_flags=current.trace_flags,
        trace_state=state,
    )
    attached = trace.set_span_in_context(NonRecordingSpan(scoped))
    token = otel_context.attach(attached)
    try:
        yield
    finally:
        # Reset only where it was attached: the block of a workflow evicted mid-wake is
        # finalized wherever garbage collection runs, in another contextvars.Context,
        # where the token is invalid and there is nothing to detach (``detach`` would log
        # an error). Temporal's interceptor detaches its own contexts the same way.
        if otel_context.get_current() is attached:
            with suppress(ValueError):
                token.var.reset(token)


def wake_scope(tenant: str, wake_id: str) -> AbstractContextManager[None]:
    """Workflow code of one wake: the wake's root span is current (see the module doc).
    Deterministic: only the current context and the wake id go in, nothing comes out."""
    return _scope(wake_ids(tenant, wake_id)[1], mark=True)


def tool_scope(tenant: str, wake_id: str, call_id: str) -> AbstractContextManager[None]:
    """Workflow code handling one tool call of a wake itself (a delegation): the call's
    ``execute_tool`` span is current, so a child workflow started here is under it. Its
    span is written under the wake's root, which needs no mark: the wake's one is dropped
    (a child's wakes set their own)."""
    return _scope(tool_call_ids(tenant, wake_id, call_id)[1], mark=False)


def root_parent(current: SpanContext) -> SpanContext | None:
    """The parent a wake scope recorded in ``current``'s ``tracestate`` for the wake's root
    (the span its workflow code ran under); None when ``current`` was not started in a wake
    scope (no tracing in the workflow, or a sampler that drops ``tracestate``)."""
    mark = current.trace_state.get(TRACESTATE_KEY, "") if current.is_valid else ""
    try:
        parent = int(mark, 16) if len(mark) == 16 else 0
    except ValueError:
        return None
    if not parent:
        return None
    return SpanContext(
        current.trace_id,
        parent,
        is_remote=True,
        trace_flags=current.trace_flags,
        trace_state=TraceState(),
    )


class WakeIdGenerator:
    """The wrapped generator's ids, except for the root span of a wake being written."""

    def __init__(self, inner: Any = None) -> None:
        self.inner = inner

    def generate_trace_id(self) -> int:
        forced = _FORCED.get()
        if forced is not None:
            return forced[0]
        if self.inner is not None:
            return int(self.inner.generate_trace_id())
        return random.getrandbits(128) or 1

    def is_trace_id_random(self) -> bool:
        if _FORCED.get() is not None:
            return False
        return bool(self.inner.is_trace_id_random()) if self.inner is not None else True

    def generate_span_id(self) -> int:
        forced = _FORCED.get()
        if forced is None:
            if self.inner is not None:
                return int(self.inner.generate_span_id())
            return random.getrandbits(64) or 1
        _FORCED.set(None)  # once: spans started while writing the root get their own ids
        return forced[1]

    @staticmethod
    @contextmanager
    def forcing(tenant: str, wake_id: str) -> Iterator[None]:
        with WakeIdGenerator.forcing_ids(wake_ids(tenant, wake_id)):
            yield

    @staticmethod
    @contextmanager
    def forcing_ids(ids: tuple[int, int]) -> Iterator[None]:
        """The next span started gets these (trace id, span id)."""
        token = _FORCED.set(ids)
        try:
            yield
        finally:
            _FORCED.reset(token)


def adopt_wake_ids(tracer: object) -> bool:
    """Let ``tracer`` (an SDK tracer: it has an ``id_generator``) hand out a wake's root ids.

    Only Wakeful's own tracer is touched (the SDK keeps one per instrumentation scope), and
    its generator is wrapped, not replaced: every other span keeps the ids it would have
    had. False for a tracer that takes no id generator (a no-op or foreign one)."""
    current = getattr(tracer, "id_generator", None)
    if current is None:
        return False
    if not isinstance(current, WakeIdGenerator):
        tracer.id_generator = WakeIdGenerator(current)  # type: ignore[attr-defined]
    return True
