"""``wakeful decisions``: read and write an agent's load-bearing decision registry.

wakeful decisions list ops                      live decisions: id, key, source, since, expires
wakeful decisions list ops --all                superseded, retired and expired ones too
wakeful decisions add ops db.engine "Use Postgres 16." --rationale "..." [--expires 2027-01-01]
wakeful decisions supersede ops P-1 "Use Postgres 17."   a new decision on P-1's key
wakeful decisions retire ops P-2                ends a decision (or declines a proposal)
wakeful decisions accept ops DEC-67             takes the model's proposal as your decision

Decisions written here are the ``person``'s (the model's are ``tool``, the promotion rules'
``consolidation``). A decision added on a key that has a current decision supersedes it.
A person's decision stands until a person changes it: what the model records on its key is
a proposal, listed here as ``proposed`` (and shown to the model as pending) until a person
accepts or retires it. The registry is in every window the agent compiles from then on.

Exit codes: 0 done (or listed), 2 misuse (no such agent or decision, a bad key, a decision
already superseded or retired, an expiry in the past), 3 the database is unreachable.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import typer

from wakeful.cli.common import JSON, emit_json, friendly, open_store, settings
from wakeful.errors import UserError

# The substrate is imported inside the commands, so `wakeful --help` does not load it.
if TYPE_CHECKING:
    from wakeful.substrate.records import DecisionRecord
    from wakeful.substrate.store import TenantStore

app = typer.Typer(help="An agent's load-bearing decision registry.", no_args_is_help=True)

AGENT = typer.Argument(..., help="Agent name.")
RATIONALE = typer.Option(None, "--rationale", help="Why the decision was taken.")


def _tenant(agent: str) -> TenantStore:
    s = settings()
    ts = open_store(s).tenant(s.tenant)
    ts.get_agent(agent)  # an unknown agent is one line and exit 2
    return ts


@app.command("list")
@friendly
def list_(
    agent: str = AGENT,
    all_: bool = typer.Option(
        False, "--all", help="Superseded, retired and expired decisions too."
    ),
    json_out: bool = JSON,
) -> None:
    """The agent's live decisions and pending proposals (with --all, every decision it
    ever had)."""
    ts = _tenant(agent)
    now = datetime.now(UTC)
    # Oldest first (ids sort as text: P-10 would come before P-2).
    entries = sorted(ts.all_decisions(agent), key=lambda d: (d.created_at or now, d.decision_id))
    rows = [_row(d, now) for d in entries]
    if not all_:
        rows = [r for r in rows if r["status"] in ("live", "proposed")]
    if json_out:
        emit_json(rows)
        return
    if not rows:
        typer.echo(f"agent {agent!r} has no {'' if all_ else 'live '}decisions")
        return
    for r in rows:
        state = "" if r["status"] == "live" else f" [{_state(r)}]"
        typer.echo(
            f"{r['decision_id']}  key {r['key'] or '-'}  {r['source']}  since {r['since']:%Y-%m-%d}"
            f"  expires {r['expires'].isoformat() if r['expires'] else 'never'}{state}"
            f"\n    {r['text']}" + (f"\n    why: {r['rationale']}" if r["rationale"] else "")
        )


@app.command("add")
@friendly
def add(
    agent: str = AGENT,
    key: str = typer.Argument(..., help="A stable name for what is decided, e.g. db.engine."),
    text: str = typer.Argument(..., help="The decision, in a sentence."),
    rationale: str | None = RATIONALE,
    expires: str | None = typer.Option(
        None, "--expires", help="When it lapses: an ISO date or time (UTC unless given)."
    ),
    json_out: bool = JSON,
) -> None:
    """Add a decision on KEY; the decision current on KEY (if any) is superseded by it."""
    now = datetime.now(UTC)
    until = None if expires is None else _expiry(expires, now)
    ts = _tenant(agent)
    # The store checks the key, the text and the rationale (wakeful.decisions.check_decision).
    rec = ts.record_decision(
        agent, key=key, text=text, rationale=rationale, source="person", expires_at=until
    )
    _done(ts, agent, rec, now, json_out)


@app.command("supersede")
@friendly
def supersede(
    agent: str = AGENT,
    decision_id: str = typer.Argument(..., help="The decision replaced (see `list`)."),
    text: str = typer.Argument(..., help="The decision that replaces it."),
    rationale: str | None = RATIONALE,
    json_out: bool = JSON,
) -> None:
    """Replace a live decision with a new one on its key."""
    now = datetime.now(UTC)
    ts = _tenant(agent)
    rec = ts.supersede_with(agent, decision_id, text=text, rationale=rationale, at=now)
    _done(ts, agent, rec, now, json_out)


@app.command("accept")
@friendly
def accept(
    agent: str = AGENT,
    decision_id: str = typer.Argument(..., help="The proposal taken (see `list`)."),
    json_out: bool = JSON,
) -> None:
    """Take a proposal as your decision: it replaces the decision it was proposed over."""
    now = datetime.now(UTC)
    ts = _tenant(agent)
    rec = ts.accept_proposal(agent, decision_id, at=now)
    _done(ts, agent, rec, now, json_out)


@app.command("retire")
@friendly
def retire(
    agent: str = AGENT,
    decision_id: str = typer.Argument(..., help="The decision ended (see `list`)."),
    json_out: bool = JSON,
) -> None:
    """End a live decision without a successor: later windows no longer carry it."""
    now = datetime.now(UTC)
    ts = _tenant(agent)
    rec = ts.retire_decision(agent, decision_id, at=now, by="person")
    if json_out:
        emit_json(_row(rec, now))
        return
    typer.echo(f"retired {rec.decision_id} of {agent}")


def _done(ts: TenantStore, agent: str, rec: DecisionRecord, now: datetime, json_out: bool) -> None:
    replaced = [
        d.decision_id for d in ts.all_decisions(agent) if d.superseded_by == rec.decision_id
    ]
    if json_out:
        emit_json(_row(rec, now) | {"replaces": replaced})
        return
    also = f", superseding {', '.join(replaced)}" if replaced else ""
    typer.echo(f"recorded {rec.decision_id} on key {rec.key} of {agent}{also}")


def _expiry(text: str, now: datetime) -> datetime:
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        raise UserError(
            f"--expires {text!r} is not an ISO date or time; write e.g. 2027-01-31 or"
            " 2027-01-31T18:00+00:00"
        ) from None
    at = at if at.tzinfo is not None else at.replace(tzinfo=UTC)
    if at <= now:
        raise UserError(f"--expires {text!r} is in the past; give a later date or leave it out")
    return at


def _row(d: DecisionRecord, now: datetime) -> dict[str, Any]:
    return {
        "decision_id": d.decision_id,
        "key": d.key,
        "text": d.text,
        "rationale": d.rationale,
        "source": d.source,
        "since": d.created_at,
        "expires": d.expires_at,
        "status": d.status(now),
        "superseded_by": d.superseded_by,
        "retired_at": d.retired_at,
        "retired_by": d.retired_by,
        "proposal_for": d.proposal_for,
    }


def _state(r: dict[str, Any]) -> str:
    if r["status"] == "proposed":
        return f"proposed over {r['proposal_for']}: accept or retire it"
    if r["status"] == "superseded":
        return f"superseded by {r['superseded_by']}"
    if r["status"] == "retired":
        return f"retired {r['retired_at']:%Y-%m-%d} by {r['retired_by']}"
    return str(r["status"])
