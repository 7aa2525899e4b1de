"""Looking inside past calls: ``explain``, ``diff``, ``replay`` and ``handoff show``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from wakeful.cli.common import JSON, emit_json, friendly, open_store, settings
from wakeful.errors import StoreError, UserError

# The compiler and the substrate are imported inside the commands that use them, so
# `wakeful --help` loads neither.
if TYPE_CHECKING:
    from wakeful.compiler import Ledger, LedgerDiff
    from wakeful.substrate.records import CompileRecord
    from wakeful.substrate.store import TenantStore

handoff_app = typer.Typer(help="Handoff notes.", no_args_is_help=True)

WAKE = typer.Option(..., "--wake", "-w", help="Wake number (see `wakeful agent show`).")
CALL = typer.Option(-1, "--call", help="Model call within the wake; -1 is the last.")


def compile_of(ts: TenantStore, agent: str, wake: int, call: int) -> CompileRecord:
    ts.get_agent(agent)  # an unknown agent is misuse (exit 2), named as such
    try:
        rec = ts.wake_by_number(agent, wake)
    except StoreError as exc:
        raise UserError(str(exc)) from None
    compiles = ts.compiles(rec.wake_id)
    if not compiles:
        raise StoreError(f"wake {wake} of {agent!r} has no compiled window")
    try:
        return compiles[call]
    except IndexError:
        raise UserError(
            f"wake {wake} of {agent!r} has {len(compiles)} call(s), not {call}"
        ) from None


def ledger_of(ts: TenantStore, rec: CompileRecord) -> Ledger:
    from wakeful.substrate.cache_outcomes import ledger_of as read

    return read(ts, rec)


def explain(agent: str, wake: int = WAKE, call: int = CALL, json_out: bool = JSON) -> None:
    """Print the ledger of one model call: every block, in or out, and why; and its cache
    outcome against the call before it (hit, prefix changed, TTL expired, ...)."""
    friendly(_explain)(agent, wake, call, json_out)


def _explain(agent: str, wake: int, call: int, json_out: bool) -> None:
    s = settings()
    ts = open_store(s).tenant(s.tenant)
    from wakeful.substrate.cache_outcomes import cache_outcome_of

    rec = compile_of(ts, agent, wake, call)
    ledger = ledger_of(ts, rec)
    outcome = cache_outcome_of(ts, agent, rec)
    made = next((c for c in ts.model_calls(rec.wake_id) if c.call_index == rec.call_index), None)
    if json_out:
        cache = outcome.model_dump(mode="json") if outcome is not None else None
        served = (
            None if made is None else made.model_dump(include={"provider", "model", "failover"})
        )
        emit_json(ledger.model_dump(mode="json") | {"cache_outcome": cache, "served_by": served})
        return
    from wakeful.cli import terminal

    typer.echo(
        f"{ledger.provider}/{ledger.model}  policy {ledger.policy_name} v{ledger.policy_version}"
        f"  input {ledger.input_tokens}/{ledger.usable_tokens} tokens"
        f"  stable prefix {ledger.stable_prefix_hash[:12]}"
    )
    if made is not None and made.failover:  # a fallback served: which, and why
        typer.echo(f"served by {made.failover['served']} (failover)")
        for passed in made.failover.get("passed", []):
            typer.echo(f"  passed over {passed['route']}: {passed['reason']}")
    out = terminal.console()
    out.print(terminal.legend(), soft_wrap=True)
    out.print(terminal.segment_bar(ledger.tokens_by_bucket, width=min(out.width - 24, 120)))
    out.print(terminal.cache_line(made))
    rows = sorted(ledger.rows, key=lambda r: (r.position < 0, r.position))
    out.print(terminal.ledger_table(rows))
    for bp in ledger.breakpoints:
        typer.echo(
            f"breakpoint {bp.name:<11} at {bp.block_id} ({bp.location}) ttl={bp.ttl}"
            f" prefix={bp.prefix_tokens} tokens"
        )
    for note in ledger.notes:
        typer.echo(f"note: {note}")
    for key, value in sorted(ledger.decisions.items()):  # e.g. triggers.fired, pacing
        typer.echo(f"decision {key}: {value}")
    typer.echo(outcome.line() if outcome is not None else "cache: the call was not made")


def diff(
    agent: str,
    wake: int = WAKE,
    vs: int = typer.Option(..., "--vs", help="The wake to compare against."),
    call: int = CALL,
    vs_call: int | None = typer.Option(
        None, "--vs-call", help="The call of the --vs wake; default: the same as --call."
    ),
    json_out: bool = JSON,
) -> None:
    """Name the first block that differs between two windows, whether the cache could hit,
    and how the later call fared in the cache against the earlier one (hit, prefix changed,
    beyond lookback, ...).

    Exits 1 when the windows differ (like diff(1)), 0 when they are identical.
    """
    friendly(_diff)(agent, wake, vs, call, call if vs_call is None else vs_call, json_out)


def _diff(agent: str, wake: int, vs: int, call: int, vs_call: int, json_out: bool) -> None:
    from wakeful.compiler import diff_ledgers
    from wakeful.substrate.cache_outcomes import cache_outcome_against

    s = settings()
    ts = open_store(s).tenant(s.tenant)
    earlier = compile_of(ts, agent, vs, vs_call)
    later = compile_of(ts, agent, wake, call)
    d = diff_ledgers(ledger_of(ts, earlier), ledger_of(ts, later))
    outcome = cache_outcome_against(ts, earlier, later)
    if json_out:
        cache = outcome.model_dump(mode="json") if outcome is not None else None
        emit_json(
            d.model_dump(mode="json")
            | {"cache_could_hit": d.cache_could_hit, "cache_outcome": cache}
        )
    elif d.identical:
        typer.echo("identical windows")
        if outcome is not None:
            typer.echo(outcome.line())
    else:
        _say_diff(d, outcome.line() if outcome is not None else None)
    if not d.identical:
        raise typer.Exit(1)


def _say_diff(d: LedgerDiff, outcome: str | None) -> None:
    from wakeful.cli import terminal

    terminal.console().print(terminal.diff_panel(d, outcome))


def replay(agent: str, wake: int = WAKE, call: int = CALL, json_out: bool = JSON) -> None:
    """Recompile a past call from its point-in-time snapshot and compare the bytes."""
    friendly(_replay)(agent, wake, call, json_out)


def _replay(agent: str, wake: int, call: int, json_out: bool) -> None:
    from wakeful.replay import recompile

    s = settings()
    ts = open_store(s).tenant(s.tenant)
    outcome = recompile(ts, compile_of(ts, agent, wake, call))
    if json_out:
        emit_json(outcome.model_dump(mode="json"))
    else:
        typer.echo(outcome.summary())
    if not outcome.identical:
        raise typer.Exit(1)


@handoff_app.command("show")
@friendly
def handoff_show(agent: str, json_out: bool = JSON) -> None:
    """The latest handoff note of an agent."""
    s = settings()
    ts = open_store(s).tenant(s.tenant)
    ts.get_agent(agent)  # an unknown agent is misuse (exit 2), named as such
    note = ts.latest_handoff(agent)
    if note is None:
        raise UserError(f"agent {agent!r} has no handoff note yet; it writes one after each wake")
    if json_out:
        emit_json(note.model_dump(mode="json"))
        return
    typer.echo(f"handoff of {agent}, wake {note.wake_id}, session {note.session_id}\n")
    typer.echo(note.body.render())
