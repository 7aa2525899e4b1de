"""``wakeful approvals list``, ``wakeful approve`` and ``wakeful approvals token``: decide tool
calls that wait for a person.

A tool marked ``requires_approval`` pauses its wake until someone decides. The agent's
workflow knows which calls wait (its ``approvals`` query); the arguments are read from the
transcript in the substrate, shown as a short preview and a hash.

``wakeful approve`` decides with the Temporal access of whoever runs it, so ``--by`` is
recorded as given. Over HTTP (the ingress's ``POST /approvals/...``) an approver is named by
a token of its own, which ``wakeful approvals token NAME`` makes: the decision is recorded
as that approver's, whatever the request says.

Exit codes: 0 decided (or listed), 2 misuse (no such agent, no call with that id waiting:
unknown, decided already or timed out), 3 a server is unreachable or no worker polls the
task queue (a decision is taken by the agent's workflow, which needs a worker to run).
"""

from __future__ import annotations

import asyncio
import getpass
import hashlib
import json
import secrets
from typing import TYPE_CHECKING, Any

import typer

from wakeful.cli.common import JSON, emit_json, endpoints, friendly, progress, settings

# The contracts, the substrate and Temporal are imported inside the commands that use them,
# so `wakeful --help` loads none of them.
if TYPE_CHECKING:
    from wakeful.contracts import PendingApproval
    from wakeful.substrate.store import TenantStore

app = typer.Typer(help="Tool calls waiting for a person's approval.", no_args_is_help=True)

PREVIEW_CHARS = 120


@app.command("list")
@friendly
def list_(
    agent: str | None = typer.Argument(None, help="Agent name (default: every agent)."),
    json_out: bool = JSON,
) -> None:
    """The tool calls waiting for approval: call id, tool, wake, arguments (a preview)."""
    from wakeful.substrate.store import Store
    from wakeful.worker.client import connect, pending_approvals

    s = settings()
    ep = endpoints(s)
    ts = Store.connect(ep.database_url).tenant(s.tenant)
    names = [agent] if agent is not None else [str(r["name"]) for r in ts.list_agents()]
    if agent is not None:
        ts.get_agent(agent)  # an unknown agent is one line and exit 2

    async def go() -> list[tuple[str, PendingApproval]]:
        client = await connect(ep.temporal_address, ep.temporal_namespace)
        found: list[tuple[str, PendingApproval]] = []
        for name in names:
            found += [(name, p) for p in await pending_approvals(client, s.tenant, name)]
        return found

    rows = [_row(ts, name, p) for name, p in asyncio.run(go())]
    if json_out:
        emit_json(rows)
        return
    if not rows:
        typer.echo("no tool calls wait for approval")
        return
    for r in rows:
        deadline = f" (then {r['on_timeout']} at {r['deadline']})" if r["deadline"] else ""
        typer.echo(
            f"{r['agent']}  {r['call_id']}  {r['tool']}  wake {r['wake_id']}"
            f"  since {r['requested_at']}{deadline}\n    args {r['args_sha256']}: {r['preview']}"
        )


def _row(ts: TenantStore, agent: str, p: PendingApproval) -> dict[str, Any]:
    """A waiting call with its arguments' hash and preview (from the recorded tool call)."""
    args = next(
        (
            e.text
            for e in ts.events(agent, wake_id=p.wake_id)
            if e.kind == "tool_call" and e.tool_call_id == p.call_id
        ),
        "",
    )
    preview = " ".join(args.split())
    if len(preview) > PREVIEW_CHARS:
        preview = preview[: PREVIEW_CHARS - 3] + "..."
    return {
        "agent": agent,
        **p.model_dump(mode="json"),
        "args_sha256": hashlib.sha256(args.encode()).hexdigest()[:16],
        "preview": preview,
    }


@app.command("token")
@friendly
def token(
    name: str = typer.Argument(..., help="The approver's name, recorded with each decision."),
    tenant: str | None = typer.Option(
        None, "--tenant", help="An approver of this tenant (default: WAKEFUL_TENANT)."
    ),
) -> None:
    """A new approver token for ``POST /approvals/...`` on the ingress, as the JSON to add to
    WAKEFUL_APPROVAL_TOKENS (or, with --tenant, WAKEFUL_APPROVAL_TENANT_TOKENS)."""
    from wakeful.errors import ConfigError
    from wakeful.names import check_tenant
    from wakeful.worker.settings import APPROVER_RULE, is_approver_name

    if not is_approver_name(name):
        raise ConfigError(f"approver name {name[:80]!r} is invalid: use {APPROVER_RULE}")
    secret = secrets.token_hex(32)  # 64 characters: over MIN_APPROVAL_TOKEN_CHARS
    if tenant is None:
        typer.echo(json.dumps({name: secret}))
        variable = "WAKEFUL_APPROVAL_TOKENS"
    else:
        typer.echo(json.dumps({check_tenant(tenant, "--tenant"): {name: secret}}))
        variable = "WAKEFUL_APPROVAL_TENANT_TOKENS"
    progress(
        f"add this entry to the ingress's {variable}; {name} sends it as "
        "'Authorization: Bearer <token>' to POST /approvals/..."
    )


@friendly
def approve(
    agent: str = typer.Argument(..., help="Agent name."),
    call_id: str = typer.Argument(..., help="The waiting tool call (`wakeful approvals list`)."),
    deny: bool = typer.Option(False, "--deny", help="Deny the call: the tool does not run."),
    reason: str = typer.Option("", "--reason", help="Why (the model reads it on a denial)."),
    by: str | None = typer.Option(
        None,
        "--by",
        help="Who decides (default: the OS user); recorded as given, as this command acts "
        "with your Temporal access.",
    ),
) -> None:
    """Approve a tool call waiting for a person (or deny it with --deny --reason ...).

    Exits 0 once the agent has the decision, 2 when no call with that id waits (unknown,
    decided already or timed out) or the agent is not running, 3 when no worker polls the
    task queue within WAKEFUL_WORKER_WAIT_S seconds (default 5).
    """
    from wakeful.contracts import ApprovalDecision
    from wakeful.worker.client import connect, decide_approval, require_worker

    s = settings()
    ep = endpoints(s)
    decision = ApprovalDecision(call_id=call_id, approved=not deny, reason=reason, by=by or _user())

    async def go() -> PendingApproval:
        client = await connect(ep.temporal_address, ep.temporal_namespace)
        # The agent's workflow takes the decision in a workflow task: without a worker the
        # command would wait for one instead of saying so.
        await require_worker(
            client,
            s.task_queue,
            "start one with `wakeful worker --agents ...` and approve again",
            grace_s=s.worker_wait_s,
        )
        return await decide_approval(client, s.tenant, agent, decision)

    decided = asyncio.run(go())
    verb = "denied" if deny else "approved"
    typer.echo(f"{verb} {decided.tool} call {decided.call_id} of {agent} (wake {decided.wake_id})")


def _user() -> str:
    try:
        return getpass.getuser()
    except OSError:  # no user name in the environment (a bare container)
        return "cli"
