"""The model activity: send a stored window to the provider, store the reply, and (asked to)
append it to the transcript and, when the reply calls no tools, close the wake — one step
per model call instead of two or three.

Providers are built with their SDK retries off; this activity turns a provider failure into
an ``ApplicationError`` whose retryability and delay come from the provider (429/5xx with
``retry-after``), so Temporal owns every retry and each attempt is visible in history.

The activity is async (the provider clients are), but its substrate work is blocking: it runs
in a thread (``asyncio.to_thread``), never on the worker's event loop, where it would stall
every workflow activation and activity of the worker meanwhile. It is three transactions:
read the window (or a reply stored before), store the reply with its record, then record
the turns and close the wake. The reply is committed on its own first, so a failure after
it never makes a retry pay for a second reply.

While it runs the call heartbeats (every :data:`BEAT_EVERY_S`, whatever the provider is
doing), so a call on a worker that died is retried on another once the heartbeats stop
(``MODEL_HEARTBEAT`` in :mod:`wakeful.workflows.retries`), not after the call's whole
timeout. One provider attempt (each route, when the call fails over) gets at most the
worker's ``model_attempt_timeout_s``: a reply that never finishes (a stream whose bytes
keep coming, which no read timeout cuts) is abandoned then as a timeout, and goes to the
next route.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from wakeful.activities.deps import ActivityDeps, config_failure
from wakeful.activities.streaming import StreamPublisher
from wakeful.activities.wake import close_wake, record_reply, step_key
from wakeful.compiler.blocks import Goal, content_hash
from wakeful.contracts import (
    ANSWER_MAX_CHARS,
    CALL_MODEL,
    CallModelIn,
    CallModelOut,
    FinishWakeIn,
    ToolCallRef,
)
from wakeful.errors import ProviderError, UserError
from wakeful.providers.base import ModelProvider, ModelReply, StreamingProvider
from wakeful.providers.pricing import cost_usd
from wakeful.substrate.records import ModelCallRecord
from wakeful.substrate.store import TenantStore
from wakeful.telemetry import server_of

# How often a model call heartbeats while it runs. The SDK sends at most one heartbeat per
# 0.8 of the heartbeat timeout (the newest), so this only has to be well inside it.
BEAT_EVERY_S = 5.0


class Heartbeats:
    """``async with Heartbeats() as beats``: the attempt heartbeats every
    :data:`BEAT_EVERY_S` for the block, each beat naming the route in flight
    (:meth:`route`). A call done sooner sends none (no round trip to the server); a local
    activity, which cannot heartbeat, never does.

    The SDK sends the first heartbeat at once and then the newest one at most every 0.8 of
    the heartbeat timeout, and the newest when the activity fails: the route the server
    last heard of may be one the attempt has since left (failed over from), never one it
    has yet to try.
    """

    def __init__(self) -> None:
        self.details: dict[str, str] = {}
        self._task: asyncio.Task[None] | None = None
        self._beating = False

    async def __aenter__(self) -> Heartbeats:
        if not activity.info().is_local:
            self._task = asyncio.create_task(self._run(), name="model call heartbeats")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def route(self, route: str) -> None:
        """Say which route (``provider/model``) the call is waiting for."""
        self._note({"route": route})

    def ended(self, how: str) -> None:
        """Say that the route in flight is done with (``how``: it ``replied`` or
        ``failed``): should the attempt fail after this, the next one starts where the
        failover policy says, not past this route, as it does past a route still in flight
        when an attempt ended (see :func:`lost_route`)."""
        if self.details:
            self._note({**self.details, "ended": how})

    def _note(self, details: dict[str, str]) -> None:
        self.details = details
        if self._beating:  # the SDK holds the newest details for its next send
            activity.heartbeat(self.details)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(BEAT_EVERY_S)
            self._beating = True
            activity.heartbeat(self.details)


def provider_of(inp: CallModelIn) -> str:
    if inp.provider:
        return inp.provider
    if inp.runtime is not None:
        return inp.runtime.provider
    raise ApplicationError(
        f"call_model for wake {inp.wake.wake_id} step {inp.call_index} names no provider"
        " (CallModelIn.provider): the workflow must say which provider to call",
        type="UserError",
        non_retryable=True,
    )


def _out(rec: ModelCallRecord, reply: ModelReply) -> CallModelOut:
    return CallModelOut(
        output_hash=rec.output_hash,
        stop_reason=rec.stop_reason,
        tool_calls=tuple(ToolCallRef(id=c.id, name=c.name) for c in reply.tool_calls),
        input_tokens=rec.input_tokens,
        output_tokens=rec.output_tokens,
        cache_creation_input_tokens=rec.cache_creation_input_tokens,
        cache_read_input_tokens=rec.cache_read_input_tokens,
        cost_usd=rec.cost_usd,
        # The final reply (no tools called) is the wake's answer: a capped copy comes back.
        answer="" if reply.tool_calls else reply.text[:ANSWER_MAX_CHARS],
        answer_chars=0 if reply.tool_calls else len(reply.text),
    )


class ModelActivities:
    def __init__(self, deps: ActivityDeps) -> None:
        self.deps = deps

    @activity.defn(name=CALL_MODEL)
    async def call_model(self, inp: CallModelIn) -> CallModelOut:
        async with Heartbeats() as beats:
            return await self._call_model(inp, beats)

    async def _call_model(self, inp: CallModelIn, beats: Heartbeats) -> CallModelOut:
        wake = inp.wake
        ts = self.deps.store.tenant(wake.tenant)
        key = step_key(wake, inp.call_index, "model")
        began = time.monotonic()
        done, request, routes = await asyncio.to_thread(_load, ts, inp, key, self.deps)
        if done is not None:
            # A retry after the reply was stored must not pay for (or see) a second reply.
            rec, reply = done
            return await asyncio.to_thread(self._after, ts, inp, rec, reply, began)

        name = provider_of(inp)
        # A provider without a key (or unknown, or with a bad base URL) fails this attempt
        # for good: the wake ends model_error at once instead of after every retry.
        provider = self.deps.provider(name)
        telemetry = self.deps.telemetry
        model = str(request.get("model", ""))
        server = server_of(provider)
        with telemetry.model_span(
            name,
            model,
            wake=(wake.tenant, wake.wake_id),
            agent=wake.agent,
            conversation_id=wake.session_id,
            server=server,
            request=request,
        ) as span:
            try:
                if routes is None:
                    beats.route(f"{name}/{model}")
                    reply, failover = await self._complete(provider, request, ts, inp), None
                else:
                    reply, failover = await self._fail_over(name, request, routes, ts, inp, beats)
                # Storing the reply may fail yet: its retry must not count the route as lost.
                beats.ended("replied")
            except ProviderError as exc:
                beats.ended("failed")
                delay = timedelta(seconds=exc.retry_after) if exc.retry_after else None
                raise ApplicationError(
                    f"{name} call for wake {wake.wake_id} step {inp.call_index} failed: {exc}",
                    type="ProviderError",
                    non_retryable=not exc.retryable,
                    next_retry_delay=delay,
                ) from exc
            try:
                cost = cost_usd(reply.provider, reply.model, reply.usage)
            except UserError as exc:  # a model with no price: each retry would pay again
                raise config_failure(exc) from exc
            telemetry.record_model_call(
                provider=reply.provider,
                model=reply.model,
                usage=reply.usage,
                cost_usd=cost,
                stop_reason=reply.stop_reason,
                span=span,
                reply=reply,
                request_model=model,
                server=server,
            )
        u = reply.usage
        output = reply.model_dump_json()
        return await asyncio.to_thread(
            self._store,
            ts,
            inp,
            reply,
            output,
            ModelCallRecord(
                agent=wake.agent,
                wake_id=wake.wake_id,
                step_key=key,
                call_index=inp.call_index,
                provider=reply.provider,
                model=reply.model,
                window_hash=inp.window_hash,
                output_hash=content_hash(output),
                stop_reason=reply.stop_reason,
                input_tokens=u.input_tokens,
                output_tokens=u.output_tokens,
                cache_creation_input_tokens=u.cache_creation_input_tokens,
                cache_read_input_tokens=u.cache_read_input_tokens,
                cache_creation_5m_input_tokens=u.cache_creation_5m_input_tokens,
                cache_creation_1h_input_tokens=u.cache_creation_1h_input_tokens,
                cost_usd=cost,
                failover=failover,
            ),
            began,
        )

    async def _fail_over(
        self,
        name: str,
        request: dict[str, Any],
        routes: Routes,
        ts: TenantStore,
        inp: CallModelIn,
        beats: Heartbeats,
    ) -> tuple[ModelReply, dict[str, Any] | None]:
        """The reply of the first route that answers: the agent's own provider, then each
        fallback in order, each sent the window the compiler rendered for it. A route that
        is overloaded, fails (5xx), times out or is unreachable, on attempt
        ``after_attempts`` or later, cools down and the next is tried; one cooling down is
        passed over (the last is always tried). Any other failure, or the last route's,
        leaves as it is: Temporal retries the call. A retry after an attempt that ended
        while a route was in flight (its worker died, or it timed out) starts past that
        route, when the policy fails over from that attempt (see :func:`lost_route`). The
        second value says who served and why, when it was not the agent's own route (None:
        it was)."""
        chain = [(name, f"{name}/{request.get('model', '')}", request), *routes.load(ts)]
        now = self.deps.clock()
        keys = [key for _, key, _ in chain]
        cooling = await asyncio.to_thread(_cooling, ts, keys, now)
        passed: list[dict[str, str]] = []
        attempt = activity.info().attempt
        lost = lost_route(routes.after_attempts)
        # Past the lost route, when it is one of the chain's but its last (always tried).
        start = keys.index(lost) + 1 if lost in keys[:-1] else 0
        for n, (provider_name, route, body) in enumerate(chain):
            last = n == len(chain) - 1
            if n < start:
                reason = (
                    f"no reply when attempt {attempt - 1} ended (its worker was lost or the"
                    " call timed out)"
                    if route == lost
                    else f"passed over in attempt {attempt - 1}"
                )
                passed.append({"route": route, "reason": reason})
                continue
            if route in cooling and not last:
                passed.append({"route": route, "reason": f"cooling down: {cooling[route]}"})
                continue
            beats.route(route)
            try:
                reply = await self._complete(self.deps.provider(provider_name), body, ts, inp)
            except ProviderError as exc:
                if last or not fails_over(exc) or attempt < routes.after_attempts:
                    raise
                until = now + timedelta(seconds=routes.cooldown_s)
                await asyncio.to_thread(_cool_down, ts, route, until, str(exc))
                passed.append({"route": route, "reason": str(exc)})
                continue
            return reply, ({"served": route, "passed": passed} if passed else None)
        raise AssertionError("the last route is always tried")  # pragma: no cover

    async def _complete(
        self, provider: ModelProvider, request: dict[str, Any], ts: TenantStore, inp: CallModelIn
    ) -> ModelReply:
        """The provider's reply; streamed when it can stream (and the worker streams), its
        pieces published for callers tailing the wake (see :mod:`.streaming`). One that
        is not complete within the worker's ``model_attempt_timeout_s`` is abandoned, as a
        retryable timeout (no status: a failover goes to the next route)."""
        limit = self.deps.model_attempt_timeout_s
        try:
            async with asyncio.timeout(limit) as deadline:
                if not (self.deps.stream_model_calls and isinstance(provider, StreamingProvider)):
                    return await provider.complete(request)
                async with StreamPublisher(
                    ts, inp.wake.agent, inp.wake.wake_id, inp.call_index
                ) as on_event:
                    return await provider.stream(request, on_event)
        except TimeoutError as exc:
            if not deadline.expired():
                raise
            raise ProviderError(
                f"no complete reply within {limit:g} s (the attempt's deadline,"
                " WAKEFUL_MODEL_ATTEMPT_TIMEOUT_S); abandoned as a timeout",
                retryable=True,
            ) from exc

    def _store(
        self,
        ts: TenantStore,
        inp: CallModelIn,
        reply: ModelReply,
        output: str,
        rec: ModelCallRecord,
        began: float,
    ) -> CallModelOut:
        """Store the reply (``output``, its JSON) and its record in one transaction,
        committed before anything else is written; then go on as :meth:`_after`. Runs in a
        thread."""
        with ts.unit() as uow:  # the blob and the record: one statement
            rec, output_hash = uow.wakes.record_model_call_with_output(rec, output)
            # A concurrent attempt may have recorded first: answer with its reply, not this.
            if rec.output_hash != output_hash:
                output = uow.blobs.get_blob(rec.output_hash)
                reply = ModelReply.model_validate_json(output)
        # Committed: the tool calls it asks for may take it from here.
        self.deps.replies.put((ts.name, rec.output_hash), output)
        return self._after(ts, inp, rec, reply, began)

    def _after(
        self,
        ts: TenantStore,
        inp: CallModelIn,
        rec: ModelCallRecord,
        reply: ModelReply,
        began: float,
    ) -> CallModelOut:
        """Record the (first stored) reply and close the wake, when the workflow asked to
        (one transaction). Runs in a thread."""
        out = _out(rec, reply)
        if not (inp.record or inp.finish):
            return out
        if inp.at is None:
            raise ApplicationError(
                f"call_model for wake {inp.wake.wake_id} step {inp.call_index} was asked to"
                " record or finish without a time (CallModelIn.at): set at=workflow.now()",
                type="UserError",
                non_retryable=True,
            )
        with ts.unit() as uow:
            here = ts.within(uow)  # for the helpers written against the store's methods
            if inp.record:
                record_reply(here, inp.wake, inp.call_index, reply, inp.at)
            if not (inp.finish and not reply.tool_calls):
                return out
            compiled = self.deps.compiles.get((ts.name, inp.wake.wake_id, inp.call_index))
            if compiled is None:
                (compiled,) = [
                    c
                    for c in uow.wakes.compiles(inp.wake.wake_id)
                    if c.call_index == inp.call_index
                ]
            handoff_id = close_wake(
                here,
                FinishWakeIn(
                    wake=inp.wake,
                    goal=Goal.model_validate(compiled.goal),  # the goal this call compiled for
                    status="done",
                    at=_finished_at(inp.at, began),
                    model_calls=inp.call_index + 1,
                    tool_calls=inp.tool_calls,
                ),
                self.deps.telemetry,
            )
        return out.model_copy(update={"handoff_id": handoff_id})


def lost_route(after_attempts: int) -> str | None:
    """The route the previous attempt of this call was waiting for when it ended with
    neither a reply nor a failure of the route's own (its worker died, or it timed out):
    the route its last heartbeat named (see :class:`Heartbeats`). None: there was no such
    attempt, or the failover policy fails over only from a later attempt
    (``after_attempts``)."""
    info = activity.info()
    if info.attempt - 1 < after_attempts or not info.heartbeat_details:
        return None
    last = info.heartbeat_details[-1]
    if not isinstance(last, dict) or "ended" in last:
        return None
    route = last.get("route")
    return route if isinstance(route, str) else None


def fails_over(exc: ProviderError) -> bool:
    """Whether a failure sends the call to the next route: overloaded (529, 503), any other
    5xx, a timeout or an unreachable endpoint (no status). A 429 waits for its own provider
    (a rate limit is the caller's, not an outage); other 4xx are the request's fault."""
    return exc.retryable and (exc.status is None or exc.status >= 500 or exc.status == 408)


@dataclass(frozen=True)
class Routes:
    """A compile's failover routes (``compiles.alternates``): each fallback's window blob,
    in order, and the policy's rules."""

    windows: tuple[tuple[str, str], ...]  # (provider/model, window blob)
    after_attempts: int
    cooldown_s: float

    @classmethod
    def of(cls, alternates: dict[str, Any]) -> Routes:
        return cls(
            tuple((str(k), str(h)) for k, h in alternates["routes"]),
            int(alternates["after_attempts"]),
            float(alternates["cooldown_s"]),
        )

    def load(self, ts: TenantStore) -> list[tuple[str, str, dict[str, Any]]]:
        """(provider, provider/model, window) of each fallback, in order."""
        with ts.unit() as uow:
            return [
                (key.partition("/")[0], key, json.loads(uow.blobs.get_blob(h)))
                for key, h in self.windows
            ]


def _cooling(ts: TenantStore, routes: list[str], now: datetime) -> dict[str, str]:
    with ts.unit() as uow:
        return uow.cooldowns.cooling_routes(routes, now)


def _cool_down(ts: TenantStore, route: str, until: datetime, reason: str) -> None:
    with ts.unit() as uow:
        uow.cooldowns.cool_down_route(route, until, reason)


def _load(
    ts: TenantStore, inp: CallModelIn, key: str, deps: ActivityDeps
) -> tuple[tuple[ModelCallRecord, ModelReply] | None, dict[str, Any], Routes | None]:
    """The call's stored record and reply when a previous attempt stored them; else the
    window to send and, for an agent with fallbacks, its compile's failover routes (each
    from the worker's caches when this worker compiled it: ``deps.windows``,
    ``deps.compiles``). One transaction; runs in a thread."""
    with ts.unit() as uow:
        done = uow.wakes.model_call_by_step(key)
        if done is not None:
            reply = ModelReply.model_validate_json(uow.blobs.get_blob(done.output_hash))
            return (done, reply), {}, None
        window = deps.windows.get(inp.window_hash)
        if window is None:
            window = uow.blobs.get_blob(inp.window_hash)
        compiled = deps.compiles.get((ts.name, inp.wake.wake_id, inp.call_index))
        routes = (
            uow.wakes.compile_alternates(inp.wake.wake_id, inp.call_index)
            if compiled is None
            else compiled.alternates
        )
        return None, json.loads(window), None if routes is None else Routes.of(routes)


def _finished_at(at: datetime, began: float) -> datetime:
    """Workflow time when the call ends: its attempt's start (server clock, like
    ``workflow.now()``, also under a time-skipping test server) plus the time it took."""
    start = max(at, activity.info().current_attempt_scheduled_time)
    return start + timedelta(seconds=time.monotonic() - began)
