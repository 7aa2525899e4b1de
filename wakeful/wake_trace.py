"""One trace per wake, whose root span is written when the wake ends.

A wake spans several activities, possibly on several workers and across worker restarts,
and the workflow code that drives it may not do I/O — so no process holds a wake's span
open from start to finish. Instead the wake's trace id and root span id are *derived* from
``(tenant, wake_id)``: every activity of the wake parents its spans (compile, model call,
tool) on that span context, and the activity that finishes the wake writes the root span
itself, with those very ids, its recorded start time and the end time. Backends assemble
the tree whatever order the spans arrive in.

The ids are a hash, so they are the same in every process and after a retry; OpenTelemetry
requires only that they be unique and non-zero, which a 128/64-bit hash of a unique wake id
is (with overwhelming probability). The SDK's id generator is asked for ids only when a span
starts, so :class:`WakeIdGenerator` hands out the derived ids exactly once, for the root
span, and random ones otherwise.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

__all__ = ["WakeIdGenerator", "wake_context", "wake_ids"]

_FORCED: ContextVar[tuple[int, int] | None] = ContextVar("wakeful_forced_ids", default=None)


def wake_ids(tenant: str, wake_id: str) -> tuple[int, int]:
    """(trace id, root span id) of a wake: stable across processes and retries."""
    digest = hashlib.blake2b(f"{tenant}\x00{wake_id}".encode(), digest_size=24).digest()
    trace_id = int.from_bytes(digest[:16], "big") or 1
    span_id = int.from_bytes(digest[16:], "big") or 1
    return trace_id, span_id


def wake_context(tenant: str, wake_id: str) -> Context:
    """A context whose current span is the wake's root (remote: it is written elsewhere)."""
    trace_id, span_id = wake_ids(tenant, wake_id)
    parent = SpanContext(
        trace_id, span_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED)
    )
    return trace.set_span_in_context(NonRecordingSpan(parent))


class WakeIdGenerator(RandomIdGenerator):
    """Random ids, except for the root span of a wake being written (see module)."""

    def generate_trace_id(self) -> int:
        forced = _FORCED.get()
        return forced[0] if forced is not None else super().generate_trace_id()

    def is_trace_id_random(self) -> bool:
        return _FORCED.get() is None

    def generate_span_id(self) -> int:
        forced = _FORCED.get()
        if forced is None:
            return super().generate_span_id()
        _FORCED.set(None)  # once: spans started while writing the root get their own ids
        return forced[1]

    @staticmethod
    @contextmanager
    def forcing(tenant: str, wake_id: str) -> Iterator[None]:
        token = _FORCED.set(wake_ids(tenant, wake_id))
        try:
            yield
        finally:
            _FORCED.reset(token)
