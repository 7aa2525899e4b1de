"""``wakeful schedule add|list|pause|unpause|trigger|delete``: periodic wakes (Temporal Schedules).

Overlap and catch-up policies are explained in :mod:`wakeful.worker.schedules`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TYPE_CHECKING, TypeVar

import typer

from wakeful.cli.common import (
    INTENT,
    JSON,
    PATH,
    TASK_CLASS,
    emit_json,
    endpoints,
    friendly,
    open_store,
    settings,
)
from wakeful.errors import UserError

# Temporal and the agents' models are imported inside the commands that use them, so
# `wakeful --help` loads neither.
if TYPE_CHECKING:
    from temporalio.client import Client, ScheduleOverlapPolicy

app = typer.Typer(
    help="Periodic wakes: Temporal Schedules that wake an agent.", no_args_is_help=True
)

T = TypeVar("T")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
_OVERLAP = ("skip", "buffer_one", "allow_all")


def _overlap_policy(name: str) -> ScheduleOverlapPolicy:
    """The Temporal overlap policy an ``--overlap`` value (one of ``_OVERLAP``) names."""
    from temporalio.client import ScheduleOverlapPolicy

    return {
        "skip": ScheduleOverlapPolicy.SKIP,
        "buffer_one": ScheduleOverlapPolicy.BUFFER_ONE,
        "allow_all": ScheduleOverlapPolicy.ALLOW_ALL,
    }[name]


def parse_duration(text: str) -> timedelta:
    """``90s``, ``15m``, ``2h``, ``1d`` (or combinations such as ``1h30m``)."""
    parts = re.findall(r"(\d+)([smhd])", text.strip().lower())
    if not parts or "".join(n + u for n, u in parts) != text.strip().lower():
        raise UserError(f"duration {text!r} must look like 90s, 15m, 2h, 1d or 1h30m")
    return timedelta(seconds=sum(int(n) * _UNITS[u] for n, u in parts))


def _run(fn: Callable[[Client], Awaitable[T]]) -> T:
    from wakeful.worker.client import connect

    ep = endpoints(settings())

    async def go() -> T:
        return await fn(await connect(ep.temporal_address, ep.temporal_namespace))

    return asyncio.run(go())


@app.command("add")
@friendly
def add(
    agent: str = typer.Argument(..., help="Agent name."),
    name: str = typer.Argument(..., help="Schedule name, unique per agent."),
    message: str = typer.Option(..., "--message", "-m", help="What each wake should do."),
    every: str | None = typer.Option(None, help="Interval: 15m, 1h, 1d ..."),
    cron: str | None = typer.Option(None, help="Cron expression (UTC), e.g. '0 9 * * 1-5'."),
    catchup: str = typer.Option("1h", help="Run fires missed by at most this much."),
    overlap: str = typer.Option("skip", help="skip | buffer_one | allow_all"),
    paused: bool = typer.Option(False, "--paused", help="Create it paused."),
    new_session: bool = typer.Option(False, "--new-session", help="Each fire starts a session."),
    intent: list[str] = INTENT,
    path: list[str] = PATH,
    task_class: str | None = TASK_CLASS,
) -> None:
    """Create a schedule that wakes AGENT with MESSAGE."""
    from temporalio.client import ScheduleAlreadyRunningError

    from wakeful.agents import AgentRuntime
    from wakeful.routing import routing
    from wakeful.worker.schedules import create_schedule

    route = routing(intent, path, task_class)  # before any server is asked
    s = settings()
    row = open_store(s).tenant(s.tenant).get_agent(agent)
    runtime = AgentRuntime.model_validate(row["spec"]["runtime"])
    if overlap not in _OVERLAP:
        raise UserError(f"--overlap {overlap!r} must be one of {', '.join(_OVERLAP)}")
    try:
        handle = _run(
            lambda c: create_schedule(
                c,
                runtime,
                name,
                message=message,
                task_queue=s.task_queue,
                every=parse_duration(every) if every else None,
                cron=cron,
                catchup_window=parse_duration(catchup),
                overlap=_overlap_policy(overlap),
                paused=paused,
                new_session=new_session,
                intents=route.intents,
                paths=route.paths,
                task_class=route.task_class,
            )
        )
    except ScheduleAlreadyRunningError:
        raise UserError(
            f"agent {agent!r} already has a schedule {name!r}: delete it first"
            f" (`wakeful schedule delete {agent} {name}`) or choose another name"
        ) from None
    typer.echo(f"created {handle.id}{' (paused)' if paused else ''}")


@app.command("list")
@friendly
def list_(
    agent: str | None = typer.Option(None, help="Only this agent's schedules."),
    json_out: bool = JSON,
) -> None:
    """Schedules of the current tenant."""
    from wakeful.worker.schedules import list_schedules

    tenant = settings().tenant
    rows = _run(lambda c: list_schedules(c, tenant=tenant, agent=agent))
    if json_out:
        emit_json([r.model_dump(mode="json") for r in rows])
        return
    for r in rows:
        nxt = r.next_fires[0].isoformat() if r.next_fires else "-"
        state = "paused" if r.paused else "active"
        typer.echo(f"{r.agent:<20} {r.name:<20} {state:<7} next {nxt}")


def _act(verb: str) -> Callable[[str, str], None]:
    def command(
        agent: str = typer.Argument(..., help="Agent name."),
        name: str = typer.Argument(..., help="Schedule name."),
    ) -> None:
        from temporalio.service import RPCError, RPCStatusCode

        from wakeful.worker import schedules as sch

        fn = {
            "pause": sch.pause_schedule,
            "unpause": sch.unpause_schedule,
            "trigger": sch.trigger_schedule,
            "delete": sch.delete_schedule,
        }[verb]
        tenant = settings().tenant
        try:
            _run(lambda c: fn(c, tenant, agent, name))
        except RPCError as exc:
            if exc.status != RPCStatusCode.NOT_FOUND:
                raise
            raise UserError(
                f"agent {agent!r} has no schedule {name!r}; see `wakeful schedule list`"
            ) from None
        typer.echo(f"{verb}: {sch.schedule_id(tenant, agent, name)}")

    command.__doc__ = {
        "pause": "Pause a schedule (fires are skipped until unpaused).",
        "unpause": "Resume a paused schedule.",
        "trigger": "Fire a schedule once, now.",
        "delete": "Delete a schedule (running wakes finish).",
    }[verb]
    return command


for _verb in ("pause", "unpause", "trigger", "delete"):
    app.command(_verb)(friendly(_act(_verb)))
