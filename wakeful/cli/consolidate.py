"""``wakeful consolidate AGENT``: run a consolidation round now, schedule it, or read its log.

wakeful consolidate ops                     one round now (waits for it)
wakeful consolidate ops --if-pressured      only if the last compile evicted history
wakeful consolidate ops --schedule --every 1d --pressure-every 1h
wakeful consolidate ops --log 20            what the last rounds did, and why
"""

from __future__ import annotations

import asyncio

import typer

from wakeful.cli.common import JSON, emit_json, endpoints, friendly, open_store, settings
from wakeful.errors import RuntimeFailure


def consolidate(
    agent: str = typer.Argument(..., help="Agent name."),
    if_pressured: bool = typer.Option(
        False, "--if-pressured", help="Skip unless the latest compile evicted history."
    ),
    schedule: bool = typer.Option(
        False, "--schedule", help="Create or update the agent's consolidation schedules."
    ),
    every: str = typer.Option("1d", help="With --schedule: full rounds every 1d, 12h ..."),
    pressure_every: str = typer.Option(
        "1h", help="With --schedule: pressure checks every 1h ..., or 'off'."
    ),
    log: int = typer.Option(0, "--log", help="Show the last N log entries instead."),
    timeout: float = typer.Option(600.0, help="Seconds to wait for the round."),
    json_out: bool = JSON,
) -> None:
    """Consolidate an agent's history: summaries, promotions, memory hygiene.

    A round exits 3 when no worker polls the task queue within WAKEFUL_WORKER_WAIT_S
    seconds (default 5).
    """
    friendly(_consolidate)(
        agent, if_pressured, schedule, every, pressure_every, log, timeout, json_out
    )


def _consolidate(
    agent: str,
    if_pressured: bool,
    schedule: bool,
    every: str,
    pressure_every: str,
    log: int,
    timeout: float,
    json_out: bool,
) -> None:
    # The agents' models and Temporal load here, not with the command line (`--help`).
    from wakeful.agents import AgentRuntime
    from wakeful.cli.schedules import parse_duration

    # Bad input fails before any server is started or reached.
    interval = parse_duration(every)
    pressure = None if pressure_every == "off" else parse_duration(pressure_every)
    s = settings()
    ts = open_store(s).tenant(s.tenant)
    row = ts.get_agent(agent)
    if log:
        entries = ts.consolidation_log(agent, limit=log)
        if json_out:
            emit_json([e.model_dump(mode="json") for e in entries])
            return
        for e in entries:
            why = "; ".join(e.detail.get("reasons", [])) if e.status == "rejected" else ""
            typer.echo(
                f"{e.created_at:%Y-%m-%d %H:%M} {e.action:<8} {e.status:<9} {e.subject} {why}"
            )
        return
    runtime = AgentRuntime.model_validate(row["spec"]["runtime"])
    ep = endpoints(s)

    async def go() -> None:
        from temporalio.common import WorkflowIDConflictPolicy

        from wakeful.consolidation.contracts import ConsolidationInput
        from wakeful.consolidation.policy import consolidation_policy
        from wakeful.consolidation.schedule import ensure_consolidation_schedules
        from wakeful.worker.client import connect, require_worker
        from wakeful.workflows.consolidation import ConsolidationWorkflow, consolidation_workflow_id

        client = await connect(ep.temporal_address, ep.temporal_namespace)
        if schedule:
            handles = await ensure_consolidation_schedules(
                client, runtime, s.task_queue, every=interval, pressure_every=pressure
            )
            ids = [h.id for h in handles]
            emit_json({"schedules": ids}) if json_out else typer.echo("\n".join(ids))
            return
        await require_worker(
            client,
            s.task_queue,
            "start one with `wakeful worker --agents ...`",
            grace_s=s.worker_wait_s,
        )
        inp = ConsolidationInput(
            runtime=runtime,
            policy=consolidation_policy(runtime),  # the agent's settings, if any
            reason="demand",
            only_if_pressured=if_pressured,
        )
        try:
            result = await asyncio.wait_for(
                client.execute_workflow(
                    ConsolidationWorkflow.run,
                    inp,
                    id=consolidation_workflow_id(runtime.tenant, runtime.name),
                    task_queue=s.task_queue,
                    id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                ),
                timeout,
            )
        except TimeoutError:
            raise RuntimeFailure(
                f"the consolidation of {agent!r} did not finish within {timeout:.0f}s; is a worker"
                f" running on task queue {s.task_queue!r}? Start one with `wakeful worker`"
            ) from None
        if json_out:
            emit_json(result.model_dump(mode="json"))
        elif result.skipped:
            typer.echo(f"skipped: {result.skipped}")
        else:
            typer.echo(
                f"{result.spans} span(s): {result.accepted} summarised, {result.rejected} kept raw"
                f" by the gate, {result.rollups} rollup(s); {result.promoted} promoted,"
                f" {result.facts} fact(s)"
            )
            for reason in result.rejections:
                typer.echo(f"  gate: {reason}")

    asyncio.run(go())
