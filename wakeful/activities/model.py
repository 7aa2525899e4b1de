"""The model activity: send a stored window to the provider, store the reply.

Providers are built with their SDK retries off; this activity turns a provider failure into
an ``ApplicationError`` whose retryability and delay come from the provider (429/5xx with
``retry-after``), so Temporal owns every retry and each attempt is visible in history.
"""

from __future__ import annotations

import json
from datetime import timedelta

from temporalio import activity
from temporalio.exceptions import ApplicationError

from wakeful.activities.deps import ActivityDeps
from wakeful.activities.wake import step_key
from wakeful.contracts import CALL_MODEL, CallModelIn, CallModelOut, ToolCallRef
from wakeful.errors import ProviderError
from wakeful.providers.base import ModelReply
from wakeful.providers.pricing import cost_usd
from wakeful.substrate.records import ModelCallRecord


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
    )


class ModelActivities:
    def __init__(self, deps: ActivityDeps) -> None:
        self.deps = deps

    @activity.defn(name=CALL_MODEL)
    async def call_model(self, inp: CallModelIn) -> CallModelOut:
        wake = inp.wake
        ts = self.deps.store.tenant(wake.tenant)
        key = step_key(wake, inp.call_index, "model")
        # A retry after the reply was stored must not pay for (or see) a second reply.
        done = {r.step_key: r for r in ts.model_calls(wake.wake_id)}.get(key)
        if done is not None:
            return _out(done, ModelReply.model_validate_json(ts.get_blob(done.output_hash)))

        request = json.loads(ts.get_blob(inp.window_hash))
        provider = self.deps.providers(inp.runtime.provider)
        telemetry = self.deps.telemetry
        with telemetry.model_span(inp.runtime.provider, str(request.get("model", ""))) as span:
            try:
                reply = await provider.complete(request)
            except ProviderError as exc:
                delay = timedelta(seconds=exc.retry_after) if exc.retry_after else None
                raise ApplicationError(
                    f"{inp.runtime.provider} call for wake {wake.wake_id} step {inp.call_index}"
                    f" failed: {exc}",
                    type="ProviderError",
                    non_retryable=not exc.retryable,
                    next_retry_delay=delay,
                ) from exc
            telemetry.record_model_call(
                provider=reply.provider,
                model=reply.model,
                usage=reply.usage,
                cost_usd=cost_usd(reply.provider, reply.model, reply.usage),
                stop_reason=reply.stop_reason,
                span=span,
            )
        output_hash = ts.put_blob("model_output", reply.model_dump_json())
        u = reply.usage
        rec = ts.record_model_call(
            ModelCallRecord(
                agent=wake.agent,
                wake_id=wake.wake_id,
                step_key=key,
                call_index=inp.call_index,
                provider=reply.provider,
                model=reply.model,
                window_hash=inp.window_hash,
                output_hash=output_hash,
                stop_reason=reply.stop_reason,
                input_tokens=u.input_tokens,
                output_tokens=u.output_tokens,
                cache_creation_input_tokens=u.cache_creation_input_tokens,
                cache_read_input_tokens=u.cache_read_input_tokens,
                cache_creation_5m_input_tokens=u.cache_creation_5m_input_tokens,
                cache_creation_1h_input_tokens=u.cache_creation_1h_input_tokens,
                cost_usd=cost_usd(reply.provider, reply.model, u),
            )
        )
        return _out(rec, ModelReply.model_validate_json(ts.get_blob(rec.output_hash)))
