"""Approval decisions over HTTP: an approver's ``POST`` approves or denies a waiting tool call.

Routes (see :mod:`wakeful.worker.ingress_approvers`: ``Authorization: Bearer <token>`` with
the token of one of the tenant's approvers, never the webhook secret):

* ``POST /approvals/{agent}`` — an agent of the default tenant;
* ``POST /approvals/{tenant}/{agent}`` — an agent of another tenant.

The body is JSON ``{"call_id": "...", "approved": true|false, "reason": "..."}``
(``reason`` optional). The decision is recorded as taken by the token's approver (the
tool result's ``approved_by``, the ``denied by <who>`` the model reads): a body may repeat
that name as ``"by"``, and one that names anyone else is refused (403), never recorded.
Answers:

====  =====================================================================================
200   decided: ``{"status": "approved"|"denied", "call_id", "tool", "wake_id", "by"}``
401   no ``Authorization: Bearer`` token (a webhook signature is not one), a malformed one,
      a token of no approver of the tenant, or no approvers configured for it
403   a token of another tenant's approver, or a body whose ``by`` names someone else
404   invalid tenant or agent name, or the agent is not running
409   no call with that id waits for approval (unknown, decided already or timed out): a
      repeated request lands here, so it decides nothing twice
400   the JSON nests deeper than 32 levels (counted before it is parsed)
413   body too large; 422 body is not a decision (not UTF-8 JSON, or not the fields above)
503   Temporal is unreachable; retry later
====  =====================================================================================
"""

from __future__ import annotations

from typing import Protocol

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from temporalio.client import Client
from temporalio.service import RPCError

from wakeful.contracts import ApprovalDecision
from wakeful.errors import UserError
from wakeful.names import is_name
from wakeful.worker.client import decide_approval
from wakeful.worker.ingress_approvers import Approvers
from wakeful.worker.ingress_auth import AuthFailure
from wakeful.worker.ingress_body import Refused, check_length, read_body
from wakeful.worker.ingress_json import TooDeep, loads
from wakeful.worker.settings import Settings


class _Ingress(Protocol):
    """What a decision needs of the ingress's state (``ingress._Ingress``)."""

    settings: Settings
    approvers: Approvers

    async def client(self) -> Client: ...


__all__ = ["add_approval_routes"]

# A decision is a few short fields; a larger body is not one.
MAX_DECISION_BYTES = 16 * 1024


def _answer(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": code, "message": message}, status)


_DECISION_SHAPE = (
    'the body must be JSON {"call_id": "...", "approved": true|false, "reason": "..."}'
)


async def _decide(ingress: _Ingress, request: Request, tenant: str, agent: str) -> JSONResponse:
    for kind, name in (("tenant", tenant), ("agent", agent)):
        if not is_name(name):
            return _answer(404, f"unknown_{kind}", f"{kind} name in the URL is invalid")
    try:
        check_length(request, MAX_DECISION_BYTES)
        approver = ingress.approvers.identify(tenant, request.headers)
        body = await read_body(request, MAX_DECISION_BYTES)
    except AuthFailure as err:
        return _answer(err.status, err.code, err.message)
    except Refused as err:
        return _answer(err.status, err.code, err.message)
    try:
        fields = loads(body.decode("utf-8"))
        decision = ApprovalDecision.model_validate(fields)
    except TooDeep as err:
        return _answer(400, "too_deep", str(err))
    except (ValueError, ValidationError):  # JSONDecodeError and UnicodeDecodeError too
        return _answer(422, "invalid_decision", _DECISION_SHAPE)
    if "by" in fields and decision.by != approver:
        return _answer(
            403,
            "approver_mismatch",
            f"the body's 'by' names someone other than this token's approver ({approver!r}); "
            "leave 'by' out: a decision is recorded as taken by the token's approver",
        )
    decision = decision.model_copy(update={"by": approver})
    try:
        decided = await decide_approval(await ingress.client(), tenant, agent, decision)
    except UserError as err:
        not_running = "is not running" in str(err)
        return _answer(404 if not_running else 409, "not_waiting", str(err))
    except (RPCError, RuntimeError, OSError, TimeoutError):
        return JSONResponse(
            {"error": "unavailable", "message": "the orchestrator is unreachable; retry later"},
            503,
            headers={"Retry-After": "5"},
        )
    return JSONResponse(
        {
            "status": "approved" if decision.approved else "denied",
            "call_id": decided.call_id,
            "tool": decided.tool,
            "wake_id": decided.wake_id,
            "by": approver,
        }
    )


def add_approval_routes(app: FastAPI, ingress: _Ingress, default_tenant: str) -> None:
    """Add the approval routes to the ingress ``app``."""

    @app.post("/approvals/{agent}")
    async def approve(request: Request, agent: str) -> JSONResponse:
        """Approve or deny a tool call of an agent of the default tenant."""
        return await _decide(ingress, request, default_tenant, agent)

    @app.post("/approvals/{tenant}/{agent}")
    async def tenant_approve(request: Request, tenant: str, agent: str) -> JSONResponse:
        """Approve or deny a tool call of an agent of the named tenant."""
        return await _decide(ingress, request, tenant, agent)
