"""``wakeful stack up|down|status``."""

from __future__ import annotations

import typer

from wakeful.cli.common import JSON, emit_json, friendly, progress, settings

# Each command imports the stack (and with it the servers' clients) itself, so
# `wakeful --help` does not load it.

app = typer.Typer(
    help="Start, stop and inspect the embedded stack (Postgres, Temporal, Qdrant Edge)."
)


@app.command()
@friendly
def up(json_out: bool = typer.Option(False, "--json", help="Print endpoints as JSON.")) -> None:
    """Start the embedded pieces that no URL replaces; reuse them when already running."""
    from wakeful.worker.stack import EmbeddedStack

    progress("starting the embedded servers (running ones are reused)...")
    ep = EmbeddedStack(settings()).up()
    if json_out:
        emit_json(ep.model_dump(mode="json"))
        return
    typer.echo(f"postgres  {ep.database_url}")
    ui = f"; UI {ep.temporal_ui_url}" if ep.temporal_ui_url else ""
    typer.echo(f"temporal  {ep.temporal_address} (namespace {ep.temporal_namespace}{ui})")
    typer.echo(f"qdrant    {ep.qdrant_url or ep.qdrant_path}")


@app.command()
@friendly
def down() -> None:
    """Stop the embedded servers; their data stays in the state directory."""
    from wakeful.worker.stack import EmbeddedStack

    stack = EmbeddedStack(settings())
    stack.require_state()
    stack.down()
    typer.echo("stopped")


@app.command()
@friendly
def status(json_out: bool = JSON) -> None:
    """Show each piece: embedded or external, running or not, where."""
    from wakeful.worker.stack import EmbeddedStack

    stack = EmbeddedStack(settings())
    stack.require_state()
    st = stack.status()
    if json_out:
        emit_json(st.model_dump(mode="json"))
        return
    for piece in st.pieces:
        state = {True: "running", False: "stopped", None: "external"}[piece.running]
        where = piece.address or ""
        pid = f"pid {piece.pid}" if piece.pid else ""
        kind = "embedded" if piece.embedded else "external"
        typer.echo(f"{piece.name:<9} {kind:<9} {state:<8} {pid:<10} {where}")
        if piece.ui_url:
            typer.echo(f"{'':<9} {'':<9} {'':<8} {'':<10} UI {piece.ui_url}")
