"""``wakeful import``: load a LoCoMo-format conversation file into an agent's history."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from wakeful.cli.common import (
    JSON,
    emit_json,
    friendly,
    load_benchmarks,
    open_store,
    progress,
    settings,
)
from wakeful.errors import UnknownAgentError, UserError


def import_(
    file: Path = typer.Argument(..., exists=True, dir_okay=False, help="LoCoMo JSON file."),
    agent: str = typer.Option(..., "--agent", "-a", help="Agent whose history receives it."),
    sample: str | None = typer.Option(None, help="Only this sample_id (default: all)."),
    json_out: bool = JSON,
) -> None:
    """Append each conversation turn as an event (dia_id kept as the external id; from a
    source checkout, where the LoCoMo format's code lives with the benchmarks)."""
    friendly(_import)(file, agent, sample, json_out)


def _import(file: Path, agent: str, sample: str | None, json_out: bool) -> None:
    # The worker (and with it the providers) and the substrate load here, not with the
    # command line, so `wakeful --help` stays fast.
    from wakeful.agents import Agent

    load_benchmarks()  # the LoCoMo format's code lives with the benchmarks that use it
    from benchmarks.locomo import import_sample
    from wakeful.worker.serve import register_agent

    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise UserError(f"{file} is not JSON: {exc}") from None
    samples = data if isinstance(data, list) else [data]
    if sample is not None:
        samples = [s for s in samples if str(s.get("sample_id")) == sample]
        if not samples:
            raise UserError(f"{file} has no sample {sample!r}")
    s = settings()
    ts = open_store(s, create=True).tenant(s.tenant)
    try:
        ts.get_agent(agent)
    except UnknownAgentError:
        register_agent(
            ts, Agent(name=agent, instructions="Answer from the history.", tenant=s.tenant)
        )
        progress(f"created agent {agent!r}")
    counts = {}
    for item in samples:
        sample_id = str(item.get("sample_id", "?"))
        counts[sample_id] = import_sample(ts, agent, item)
        progress(f"imported {sample_id}: {counts[sample_id]} turns")
    if json_out:
        emit_json({"agent": agent, "turns": counts})
    else:
        typer.echo(f"imported {sum(counts.values())} turns into {agent!r}")
