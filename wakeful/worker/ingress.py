"""The webhook ingress: an ASGI app that turns signed HTTP deliveries into agent wakes.

Routes:

* ``POST /hooks/{agent}`` — a delivery for an agent of the default tenant
  (``WAKEFUL_TENANT``), signed with ``WAKEFUL_WEBHOOK_SECRET``;
* ``POST /hooks/{tenant}/{agent}`` — a delivery for another tenant, signed with that
  tenant's entry in ``WAKEFUL_WEBHOOK_TENANT_SECRETS``. The tenant is part of the URL (not
  a header) so a sender is configured with one URL and one secret and nothing else;
* ``POST /approvals/{agent}`` and ``/approvals/{tenant}/{agent}`` — an approver's decision
  on a waiting tool call, with a token of its own, never the webhook secret
  (``ingress_approvals``);
* ``GET /healthz`` — the process is up; ``GET /readyz`` — Postgres and Temporal answer.

Every delivery is checked in this order, and the first failure answers. Everything before
the body's signature is checked before the body is read, so a delivery that is refused
anyway is never buffered:

====  =====================================================================================
404   the tenant or agent name in the URL is not a valid name (``wakeful.names``)
413   body larger than ``webhook_max_body_bytes`` by its Content-Length
401   signature header missing or malformed, timestamp outside the replay window, or no
      secret configured for the tenant
413   body larger than ``webhook_max_body_bytes`` (the stream is counted, so an unannounced
      large body is cut off too)
401   signature wrong
403   the signature is valid under another tenant's secret
400   the JSON nests deeper than 32 levels of arrays and objects (counted before it is
      parsed, so no depth exhausts the parser's stack)
422   body is not UTF-8 JSON (a BOM, UTF-16 or UTF-32 included), holds a lone surrogate, is
      not a valid event (see ``ingress_events``), or has no idempotency key
404   no such agent in the tenant (only answered to authenticated callers)
413   the trigger the event becomes exceeds ``MAX_TRIGGER_BYTES`` (the payload is shown to
      the agent indented, so deep nesting grows it)
409   the idempotency key was already claimed for this agent by a different event
200   the key was already claimed with this same event (a sender retry, or a replay of a
      captured request inside the window): delivered again, which the agent's workflow
      drops as a key it has seen, so nothing new is woken unless the first delivery was
      lost with its workflow
202   accepted: this delivery claimed the key and Temporal has the trigger
      (signal-with-start); the agent will wake once
503   Postgres or Temporal is unreachable: nothing was accepted (a claim is released), retry
      later
====  =====================================================================================

Keys are claimed atomically (``ingress_receipts``): of concurrent deliveries with one key,
exactly one event is accepted. A sender's key is answered back to it but stored and sent
to Temporal only as a digest.

Answers are JSON ``{"error": code, "message": text}``; they say what to fix and never
include stack traces, SQL, secrets or server addresses.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from sqlalchemy import text
from sqlalchemy.exc import InterfaceError, OperationalError, SQLAlchemyError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from temporalio.client import Client
from temporalio.service import RPCError

from wakeful.agents import AgentRuntime
from wakeful.contracts import oversized_trigger
from wakeful.errors import RuntimeFailure, UnknownAgentError
from wakeful.names import is_name
from wakeful.redaction import RedactionPolicy, default_policy
from wakeful.substrate.store import Store
from wakeful.worker.client import deliver
from wakeful.worker.ingress_approvals import add_approval_routes
from wakeful.worker.ingress_approvers import Approvers
from wakeful.worker.ingress_auth import (
    SIGNATURE_HEADER,
    STANDARD_HEADERS,
    AuthFailure,
    TenantSecrets,
    precheck,
    verify_body,
)
from wakeful.worker.ingress_body import Refused as _Refused
from wakeful.worker.ingress_body import check_length as _check_length
from wakeful.worker.ingress_body import read_body as _read_body
from wakeful.worker.ingress_events import (
    EVENT_SCHEMA,
    IDEMPOTENCY_HEADER,
    EventError,
    idempotency_key,
    parse_event,
    to_trigger,
)
from wakeful.worker.ingress_receipts import Receipts, event_digest
from wakeful.worker.settings import Settings

__all__ = ["ClientFactory", "create_app"]

log = logging.getLogger("wakeful.ingress")

# What wakeful.names admits (the same rule everywhere a name comes in).
_NAME_RULE = "1-64 characters of A-Z a-z 0-9 _ . -, starting with a letter or digit"
# Errors that mean "the database is not reachable now", as opposed to a bug.
_DB_DOWN = (OperationalError, InterfaceError, PoolTimeout)

ClientFactory = Callable[[], Awaitable[Client]]


def _answer(status: int, code: str, message: str, **extra: Any) -> JSONResponse:
    headers = {"Retry-After": str(extra.pop("retry_after"))} if "retry_after" in extra else None
    return JSONResponse({"error": code, "message": message, **extra}, status, headers=headers)


def _shown(name: str) -> str:
    """A name from the URL, quoted for a one-line answer (long ones cut)."""
    shown = repr(name)
    return shown if len(shown) <= 80 else shown[:77] + "..."


class _Ingress:
    """The state behind the routes: settings, secrets, the store and a lazy Temporal client."""

    def __init__(
        self,
        settings: Settings,
        client_factory: ClientFactory,
        store: Store,
        redaction: RedactionPolicy,
        clock: Callable[[], float],
    ) -> None:
        self.settings = settings
        self.secrets = TenantSecrets.from_settings(settings)
        self.approvers = Approvers.from_settings(settings)
        self.store = store
        self.redaction = redaction
        self.clock = clock
        self._client_factory = client_factory
        self._client: Client | None = None
        self._client_lock = asyncio.Lock()

    async def client(self) -> Client:
        if self._client is None:
            async with self._client_lock:
                if self._client is None:
                    self._client = await asyncio.wait_for(
                        self._client_factory(), self.settings.connect_timeout_s
                    )
        return self._client

    def runtime_of(self, tenant: str, agent: str) -> AgentRuntime:
        row = self.store.tenant(tenant).get_agent(agent)
        runtime = (row.get("spec") or {}).get("runtime")
        if runtime is None:
            raise UnknownAgentError(agent)
        return AgentRuntime.model_validate(runtime)

    async def handle(self, request: Request, tenant: str, agent: str) -> JSONResponse:
        now = self.clock()
        s = self.settings
        # Everything that needs no body is checked before the body is read: a delivery that
        # will be refused anyway costs no buffering, however large its body.
        for kind, name in (("tenant", tenant), ("agent", agent)):
            if not is_name(name):
                raise _Refused(
                    404,
                    f"unknown_{kind}",
                    f"{kind} name {_shown(name)} in the URL is invalid (names are {_NAME_RULE});"
                    " check the URL",
                )
        _check_length(request, s.webhook_max_body_bytes)
        try:
            sig = precheck(
                self.secrets,
                tenant,
                request.headers,
                now=now,
                window_s=s.webhook_replay_window_s,
            )
            body = await _read_body(request, s.webhook_max_body_bytes)
            verify_body(self.secrets, tenant, sig, body)
        except AuthFailure as err:
            raise _Refused(err.status, err.code, err.message) from None
        try:
            event = parse_event(body)
            header_key = request.headers.get(IDEMPOTENCY_HEADER)
            if header_key is None and event.id is None:
                header_key = sig.message_id  # a Standard Webhooks delivery's webhook-id
            key = idempotency_key(event, header_key)
        except EventError as err:
            raise _Refused(err.status, err.code, err.message) from None
        try:
            runtime = await run_in_threadpool(self.runtime_of, tenant, agent)
        except UnknownAgentError:
            raise _Refused(
                404, "unknown_agent", f"no agent {agent!r} in this tenant; check the URL"
            ) from None
        # The agent's own redaction settings switch rules on or off for its webhooks too.
        rules = runtime.settings.redaction if runtime.settings is not None else {}
        redaction = self.redaction.switched(rules)
        trigger = to_trigger(event, key, redaction, datetime.fromtimestamp(now, UTC))
        # The payload is re-serialised indented for the agent to read: a deeply nested body
        # grows quadratically, so a small body can still make a trigger over the limit.
        too_large = oversized_trigger(trigger, agent)
        if too_large is not None:
            raise _Refused(413, "payload_too_large", too_large)
        receipts = Receipts(self.store.tenant(tenant), agent)
        digest = event_digest(event)
        claim = await run_in_threadpool(receipts.claim, key, digest)
        ack = {"tenant": tenant, "agent": agent, "idempotency_key": key}
        if not claim.same_event:
            raise _Refused(
                409,
                "key_conflict",
                "this idempotency key was already accepted for this agent with a different "
                "event; use a new key for a new event",
            )
        duplicate = {"status": "duplicate", **ack}
        if claim.state == "legacy":  # woken under a key the trigger can no longer repeat
            return JSONResponse(duplicate, 200)
        try:
            client = await self.client()
            # Signal-with-start returns once Temporal has durably recorded the trigger. A
            # duplicate is delivered again too: the workflow drops a key it has seen (or finds
            # in the substrate when it starts afresh), so a true duplicate wakes nothing,
            # while one whose first delivery was lost with its workflow (terminated with
            # triggers still queued) wakes the agent now.
            await deliver(client, runtime, trigger, s.task_queue)
        except (RPCError, RuntimeError, OSError, TimeoutError) as err:
            # RuntimeError: the SDK's "Failed client connect"; RPCError: the server refused.
            log.warning("delivery %s/%s: Temporal unreachable: %s", tenant, agent, err)
            if claim.won:  # the sender's retry must be delivered, whatever its body
                await run_in_threadpool(receipts.release, key, digest)
            raise _Refused(
                503, "unavailable", "the orchestrator is unreachable; retry later", 5
            ) from None
        try:
            await run_in_threadpool(receipts.delivered, key, digest)
        except SQLAlchemyError:  # Temporal has it and dedups the key: the delivery stands
            log.warning("delivery %s/%s accepted but its claim was not marked", tenant, agent)
        if not claim.won:
            return JSONResponse(duplicate, 200)
        return JSONResponse({"status": "accepted", **ack}, 202)

    async def ready(self) -> JSONResponse:
        timeout = self.settings.connect_timeout_s

        def postgres() -> None:
            with self.store.engine.connect() as conn:
                conn.execute(text("select 1"))

        async def temporal() -> None:
            client = await self.client()
            await client.service_client.check_health(timeout=timedelta(seconds=timeout))

        async def outcome(name: str, probe: Awaitable[None]) -> str:
            try:
                await asyncio.wait_for(probe, timeout)
            except Exception as err:  # a readiness probe reports, it does not raise
                log.info("readiness: %s unreachable: %s", name, type(err).__name__)
                return "unreachable"
            return "ok"

        pg, tp = await asyncio.gather(
            outcome("postgres", run_in_threadpool(postgres)), outcome("temporal", temporal())
        )
        checks = {"postgres": pg, "temporal": tp}
        ok = all(v == "ok" for v in checks.values())
        return JSONResponse(
            {"status": "ready" if ok else "not_ready", "checks": checks}, 200 if ok else 503
        )


_HOOK_DOC: dict[str, Any] = {
    "parameters": [
        {
            "name": SIGNATURE_HEADER,
            "in": "header",
            "required": False,
            "schema": {"type": "string"},
            "description": "t=<unix seconds>,v1=<hex HMAC-SHA256(secret, '<t>.<raw body>')>; "
            "several v1= values are allowed during secret rotation. Required unless the "
            "delivery is signed with the Standard Webhooks headers below.",
        },
        *(
            {
                "name": name,
                "in": "header",
                "required": False,
                "schema": {"type": "string"},
                "description": "Standard Webhooks signing (webhook-id, webhook-timestamp, "
                "webhook-signature: v1,<base64 HMAC-SHA256(secret, '<id>.<t>.<raw body>')>).",
            }
            for name in STANDARD_HEADERS
        ),
        {
            "name": IDEMPOTENCY_HEADER,
            "in": "header",
            "required": False,
            "schema": {"type": "string"},
            "description": "Idempotency key (else the body's id).",
        },
    ],
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {k: v for k, v in EVENT_SCHEMA.items() if not k.startswith("$")}
            }
        },
    },
}
_ANSWERS: dict[int | str, dict[str, Any]] = {
    200: {"description": "Duplicate of an accepted delivery; nothing new woken."},
    202: {"description": "Accepted: Temporal has the trigger."},
    401: {"description": "Missing, malformed, stale or wrong signature."},
    403: {"description": "Signed with another tenant's secret."},
    404: {"description": "No such agent, or an invalid tenant or agent name."},
    400: {"description": "The JSON nests deeper than 32 levels."},
    409: {"description": "Idempotency key already claimed by a different event."},
    413: {"description": "Body too large."},
    422: {"description": "Not UTF-8 JSON, not a valid event, or no idempotency key."},
    503: {"description": "Postgres or Temporal unreachable; retry later."},
}


def create_app(
    settings: Settings,
    client_factory: ClientFactory,
    store: Store,
    *,
    redaction: RedactionPolicy | None = None,
    clock: Callable[[], float] = time.time,
) -> FastAPI:
    """The ingress app. ``client_factory`` is awaited once, on first use, for a Temporal client.

    ``clock`` returns Unix seconds; it is the one clock the replay window is checked with.
    """
    ingress = _Ingress(settings, client_factory, store, redaction or default_policy(), clock)
    app = FastAPI(
        title="Wakeful webhook ingress",
        version="1",
        docs_url=None,
        redoc_url=None,
        redirect_slashes=False,  # a redirected POST is a lost delivery for many senders
        description=__doc__ or "",
    )
    app.state.ingress = ingress

    async def guarded(request: Request, tenant: str, agent: str) -> JSONResponse:
        try:
            response = await ingress.handle(request, tenant, agent)
        except _Refused as err:
            extra = {"retry_after": err.retry_after} if err.retry_after else {}
            response = _answer(err.status, err.code, err.message, **extra)
        except ClientDisconnect:  # the sender went away (or the server's read deadline hit)
            log.info(
                "delivery to %s/%s: the client disconnected before its body was read", tenant, agent
            )
            response = _answer(400, "disconnected", "the request body was not received")
        except (*_DB_DOWN, RuntimeFailure):
            log.warning("delivery to %s/%s: database unreachable", tenant, agent, exc_info=True)
            response = _answer(
                503, "unavailable", "the database is unreachable; retry later", retry_after=5
            )
        except Exception:
            log.exception("delivery to %s/%s failed", tenant, agent)
            response = _answer(
                500, "internal_error", "internal error; the delivery was not accepted"
            )
        log.info("delivery %s/%s -> %s", tenant, agent, response.status_code)
        return response

    @app.post("/hooks/{agent}", openapi_extra=_HOOK_DOC, responses=_ANSWERS, status_code=202)
    async def hook(request: Request, agent: str) -> JSONResponse:
        """Deliver an event to an agent of the default tenant."""
        return await guarded(request, settings.tenant, agent)

    @app.post(
        "/hooks/{tenant}/{agent}", openapi_extra=_HOOK_DOC, responses=_ANSWERS, status_code=202
    )
    async def tenant_hook(request: Request, tenant: str, agent: str) -> JSONResponse:
        """Deliver an event to an agent of the named tenant."""
        return await guarded(request, tenant, agent)

    add_approval_routes(app, ingress, settings.tenant)  # approvers' decisions on waiting calls

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        """The process is serving."""
        return {"status": "ok"}

    @app.get("/readyz", responses={503: {"description": "A dependency is unreachable."}})
    async def readyz() -> JSONResponse:
        """Postgres and Temporal answer."""
        return await ingress.ready()

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "bad_request")
        return _answer(exc.status_code, code, str(exc.detail))

    return app
