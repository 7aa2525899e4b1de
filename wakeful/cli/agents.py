"""``wakeful agent ...``, ``wakeful trigger`` and ``wakeful worker``."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import os
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from wakeful.cli.common import (
    INTENT,
    JSON,
    PATH,
    TASK_CLASS,
    emit_json,
    endpoints,
    friendly,
    one_line,
    open_store,
    progress,
    report_failure,
    settings,
)
from wakeful.errors import ConfigError, RuntimeFailure, UserError
from wakeful.idempotency import trigger_key

# Temporal, the agents' models, the substrate and the providers are imported inside the
# commands that use them, so `wakeful --help` loads none of them.
if TYPE_CHECKING:
    from temporalio.client import Client

    from wakeful.agents import AgentRegistry, AgentRuntime
    from wakeful.contracts import WakeResult
    from wakeful.skills import Skill
    from wakeful.substrate.store import TenantStore

app = typer.Typer(help="Register, list and inspect agents.")


@app.command("create")
@friendly
def create(
    agents: str = typer.Option(..., "--agents", help="package.module:registry to register."),
    json_out: bool = JSON,
) -> None:
    """Register (or update) agents defined in code, so triggers, schedules and the webhook
    ingress find them before a worker serving them starts."""
    from wakeful.worker.serve import register_agent

    s = settings()
    registry = load_registry(agents)
    store = open_store(s, create=True)
    rows = []
    for agent in registry:
        ts = store.tenant(agent.tenant)
        known = {r["name"] for r in ts.list_agents()}
        register_agent(ts, agent)
        state = "updated" if agent.name in known else "created"
        rows.append({"tenant": agent.tenant, "name": agent.name, "status": state})
    if json_out:
        emit_json(rows)
        return
    for r in rows:
        typer.echo(f"{r['status']:<8} {r['tenant']}/{r['name']}")


@app.command("list")
@friendly
def list_agents(json_out: bool = JSON) -> None:
    s = settings()
    rows = open_store(s).tenant(s.tenant).list_agents()
    if json_out:
        emit_json([{k: r[k] for k in ("name", "model", "provider", "spec_hash")} for r in rows])
        return
    for r in rows:
        typer.echo(f"{r['name']:<24} {r['provider']:<10} {r['model']}")


@app.command()
@friendly
def show(name: str, json_out: bool = JSON) -> None:
    """An agent's spec, its spend caps and today's spend, and its wakes."""
    from wakeful.workflows.spend import day_start

    s = settings()
    ts = open_store(s).tenant(s.tenant)
    row = ts.get_agent(name)
    wakes = ts.wakes(name)
    caps: dict[str, float | int] = row["spec"].get("spend_caps", {})
    today = day_start(datetime.now(UTC))
    spent = ts.spend_since(name, today)
    skills = agent_skills(row["spec"], s.skills_dir)
    if json_out:
        emit_json(
            {
                "agent": row,
                "spend_caps": caps,
                "spent_today": {"day": f"{today:%Y-%m-%d}", **spent.model_dump()},
                "skills": [{"name": k.name, "description": k.description} for k in skills],
                "wakes": [w.model_dump(mode="json") for w in wakes],
            }
        )
        return
    typer.echo(f"{row['name']}  {row['provider']}/{row['model']}  spec {row['spec_hash'][:12]}")
    typer.echo(f"  {spend_line(caps, spent.usd, spent.tokens, today)}")
    if not skills:
        typer.echo("  no skills")
    else:
        typer.echo(f"  skills ({len(skills)}):")
        for k in skills:
            typer.echo(f"    {k.name}: {k.description}")
    if not wakes:
        typer.echo("  no wakes yet")
        return
    from wakeful.cli import terminal

    terminal.console().print(terminal.wakes_table([(w, ts.model_calls(w.wake_id)) for w in wakes]))


def agent_skills(spec: dict[str, Any], worker_dir: Path | None) -> tuple[Skill, ...]:
    """The skills a worker with ``worker_dir`` (WAKEFUL_SKILLS_DIR) gives the agent of
    ``spec``: its own directory's (``Agent(skills_dir=...)``) win on a name both have. A
    directory or file that does not load is one line naming it."""
    from wakeful.skills import load_skills_dir, merge_skills

    own = spec.get("skills_dir")
    return merge_skills(
        load_skills_dir(worker_dir) if worker_dir is not None else (),
        load_skills_dir(Path(own)) if own else (),
    )


def spend_line(caps: dict[str, float | int], usd: float, tokens: int, day: datetime) -> str:
    """Today's spend against the agent's caps, on one line."""
    per_day, tokens_cap = caps.get("max_usd_per_day"), caps.get("max_tokens_per_day")
    of_usd = f" of ${per_day:g}" if per_day is not None else ""
    of_tokens = f" of {tokens_cap:,}" if tokens_cap is not None else ""
    per_wake = caps.get("max_usd_per_wake")
    wake = f"; ${per_wake:g} per wake" if per_wake is not None else ""
    none = "" if caps else " (no spend caps)"
    return (
        f"spent today (UTC {day:%Y-%m-%d}): ${usd:.4f}{of_usd}, {tokens:,} tokens{of_tokens}"
        f"{wake}{none}"
    )


def load_registry(spec: str) -> AgentRegistry:
    """``module:attribute`` or ``path/to/file.py:attribute`` naming an AgentRegistry, an
    Agent, a list of Agents, or a callable returning one of them.

    A module is found from the current directory first, as ``python -m`` finds it (a
    console script does not put the current directory on ``sys.path``).
    """
    from wakeful.agents import Agent, AgentRegistry

    target, _, attr = spec.rpartition(":")
    if not target or not attr:
        raise ConfigError(
            f"--agents {spec!r} must look like 'module:registry' or 'path/to/file.py:registry'"
        )
    try:
        obj = getattr(_import(target), attr)
    except SyntaxError as exc:  # its file and line, not a traceback
        where = f"{exc.filename}, line {exc.lineno}" if exc.filename else f"line {exc.lineno}"
        raise ConfigError(
            f"cannot load agents from {spec!r}: {exc.msg} ({where}); fix that module"
        ) from None
    except (ImportError, AttributeError, FileNotFoundError) as exc:
        raise ConfigError(f"cannot load agents from {spec!r}: {exc}") from None
    except UserError:  # an agent defined wrongly: Wakeful's own line names it and the fix
        raise
    except Exception as exc:  # the module's own code failed while it was imported
        raise ConfigError(
            f"cannot load agents from {spec!r}: importing {target} raised"
            f" {type(exc).__name__}: {one_line(str(exc))}"
        ) from None
    found = obj() if callable(obj) and not isinstance(obj, (AgentRegistry, Agent)) else obj
    if isinstance(found, Agent):
        found = AgentRegistry([found])
    elif isinstance(found, (list, tuple)) and found and all(isinstance(a, Agent) for a in found):
        found = AgentRegistry(list(found))
    if not isinstance(found, AgentRegistry):
        raise ConfigError(
            f"{spec!r} is a {type(found).__name__}, not an AgentRegistry, an Agent or a list"
            " of Agents"
        )
    return found


def _import(target: str) -> Any:
    """The module ``target`` names: a file path (ends in ``.py`` or holds a ``/``), else a
    module found from the current directory first."""
    if target.endswith(".py") or "/" in target or os.sep in target:
        path = Path(target).resolve()
        if not path.is_file():
            raise FileNotFoundError(f"no such file: {target}")
        name = f"wakeful_agents_{path.stem}"
        module_spec = importlib.util.spec_from_file_location(name, path)
        if module_spec is None or module_spec.loader is None:
            raise ImportError(f"cannot import {target} as a Python module")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module  # dataclasses and pickling look modules up by name
        sys.path.insert(0, str(path.parent))  # its own imports of modules beside it
        module_spec.loader.exec_module(module)
        return module
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    return importlib.import_module(target)


def trigger(
    agent: str = typer.Argument(..., help="Agent name."),
    message: str = typer.Option(
        ..., "--message", "-m", help="What to ask the agent (at most 512 KiB)."
    ),
    key: str | None = typer.Option(
        None,
        "--key",
        help="Idempotency key: a trigger with a key already used is not woken again (default:"
        " random). Only its SHA-256 digest is stored or sent.",
    ),
    new_session: bool = typer.Option(False, "--new-session", help="Start a fresh session."),
    no_wait: bool = typer.Option(False, "--no-wait", help="Return once Temporal has it."),
    timeout: float = typer.Option(300.0, help="Seconds to wait for the wake to finish."),
    json_out: bool = JSON,
    intent: list[str] = INTENT,
    path: list[str] = PATH,
    task_class: str | None = TASK_CLASS,
    stream: bool = typer.Option(
        False,
        "--stream",
        help="Print what the model says as it says it (and its tool calls, on stderr),"
        " then the wake's status.",
    ),
    user: str | None = typer.Option(
        None,
        "--user",
        help="The user the wake serves: it reads agent-wide memory and this user's only,"
        " and what it writes is this user's (default: an agent-wide wake).",
    ),
) -> None:
    """Wake an agent with a message (starting its workflow if needed).

    Exits 0 when the wake is done (or ``/handoff`` ended the session), 1 when it ended
    otherwise (parked, model_error, a budget, rejected...), with its status and reason on
    stderr. With no worker polling the task queue within WAKEFUL_WORKER_WAIT_S seconds
    (default 5) it exits 3 and delivers nothing (--no-wait delivers without a worker).
    """
    if stream and (no_wait or json_out):
        raise typer.BadParameter("--stream prints the wake as it runs: drop --no-wait and --json")
    friendly(_trigger)(
        agent,
        message,
        key,
        new_session,
        no_wait,
        timeout,
        json_out,
        (intent, path, task_class),
        stream,
        user,
    )


def _trigger(
    agent: str,
    message: str,
    key: str | None,
    new_session: bool,
    no_wait: bool,
    timeout: float,
    json_out: bool,
    route: tuple[list[str], list[str], str | None] = ([], [], None),
    stream: bool = False,
    user: str | None = None,
) -> None:
    from temporalio.client import WorkflowUpdateRPCTimeoutOrCancelledError
    from temporalio.service import RPCError

    from wakeful.agents import AgentRuntime
    from wakeful.compiler.blocks import Goal, GoalKind
    from wakeful.contracts import Trigger, oversized_trigger
    from wakeful.routing import routing
    from wakeful.substrate.store import Store
    from wakeful.users import check_user
    from wakeful.worker.client import connect, deliver, require_worker, wake

    check_user(user)  # one line, before any server is contacted
    user_key = key if key is not None else uuid.uuid4().hex
    t = Trigger(
        goal=routing(*route).apply(Goal(kind=GoalKind.MESSAGE, text=message)),
        idempotency_key=trigger_key("cli", user_key),
        new_session=new_session,
        user=user,
    )
    too_large = oversized_trigger(t, agent)  # before any server is contacted
    if too_large is not None:
        raise UserError(too_large)
    s = settings()
    ep = endpoints(s)
    row = Store.connect(ep.database_url).tenant(s.tenant).get_agent(agent)
    runtime = AgentRuntime.model_validate(row["spec"]["runtime"])

    async def go() -> WakeResult | None:
        client = await connect(ep.temporal_address, ep.temporal_namespace)
        if no_wait:
            await deliver(client, runtime, t, s.task_queue)
            return None
        # Nothing is delivered when no worker would run it: the caller can start one first,
        # or queue the trigger on purpose with --no-wait.
        await require_worker(
            client,
            s.task_queue,
            "start one with `wakeful worker --agents ...`, or deliver it for later with --no-wait",
            grace_s=s.worker_wait_s,
        )
        progress(f"waiting for the wake of {agent!r} (Ctrl-C stops waiting, not the wake)")
        try:
            # In this task, not wait_for's own: a Ctrl-C that cancels it leaves no task
            # behind whose error is never retrieved (printed as a traceback at exit).
            async with asyncio.timeout(timeout):
                if stream:
                    return await print_stream(client, runtime, t, s.task_queue, ep.database_url)
                return await wake(client, runtime, t, s.task_queue)
        except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError, RPCError) as exc:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                # Ctrl-C: asyncio.run cancelled the wait, and the SDK answered that with
                # its own error; cancelled it stays, so the run ends as interrupted.
                raise asyncio.CancelledError from None
            # The SDK answers a wait cut short (our timeout, or the workflow's run ending
            # under it) with its own error: say which it was, and what to do.
            why = await no_result(client, runtime, s.task_queue, timeout, exc)
            raise RuntimeFailure(why) from None

    result = asyncio.run(go())
    if result is None:
        if json_out:
            emit_json({"delivered": True, "idempotency_key": user_key})
        else:
            typer.echo(f"delivered {user_key}")
        return
    # The sender's own key, not the digest the trigger carried; the whole answer.
    answer = full_answer(Store.connect(ep.database_url).tenant(s.tenant), agent, result)
    result = result.model_copy(
        update={"idempotency_key": user_key, "output": answer, "output_truncated": False}
    )
    handoff = handed_off(result)
    if json_out:
        emit_json(result.model_dump(mode="json"))
    elif handoff is not None:
        progress(handoff)
    else:
        # Streamed whole already, the answer is not printed twice.
        if answer and (not stream or answer != streamed.get(result.wake_id)):
            typer.echo(answer)  # the answer alone on stdout, ready for a pipe
        progress(
            f"wake {result.number} ({result.session_id}) {result.status}:"
            f" {result.model_calls} model call(s), {result.tool_calls} tool call(s),"
            f" ${result.cost_usd:.4f}{' (deduplicated)' if result.deduplicated else ''}"
        )
    if result.status != "done" and handoff is None:
        report_failure(wake_failure(agent, result))


# What ``--stream`` printed of each wake's last model call (by wake id): when it is the
# whole answer, the answer is not printed again.
streamed: dict[str, str] = {}


async def print_stream(
    client: Any, runtime: Any, trigger: Any, task_queue: str, database_url: str
) -> WakeResult:
    """Print a wake's text as it streams in (tool calls on stderr); its result."""
    from wakeful.worker.client import stream_wake
    from wakeful.worker.streaming import TextDelta, ToolCallEvent, WakeFinished

    said: dict[int, str] = {}
    async for event in stream_wake(client, runtime, trigger, task_queue, database_url):
        if isinstance(event, TextDelta):
            if event.call_index not in said and said:
                typer.echo()  # each model call's text on lines of its own
            said[event.call_index] = said.get(event.call_index, "") + event.text
            typer.echo(event.text, nl=False)
            sys.stdout.flush()
        elif isinstance(event, ToolCallEvent):
            progress(f"calling {event.name} {json.dumps(event.input, ensure_ascii=False)}")
        elif isinstance(event, WakeFinished):
            last = said[max(said)] if said else ""
            streamed[event.result.wake_id] = last
            if said:
                typer.echo()
            return event.result
    raise RuntimeFailure("the wake's stream ended without its result")


def handed_off(result: WakeResult) -> str | None:
    """What a ``/handoff`` trigger did, in one line (None: the trigger was no handoff). It
    ends the open session without a wake: a success, as is finding none open."""
    if result.status == "handoff":
        return f"handed off session {result.session_id} (handoff note {result.handoff_id})"
    if result.status.startswith("handoff:"):
        return f"nothing to hand off: {result.status.partition(': ')[2]}"
    return None


def full_answer(ts: TenantStore, agent: str, result: WakeResult) -> str:
    """The wake's whole answer: the result's copy, or, when it was cut, the output tool's
    stored result (a typed answer) or the stored reply."""
    from wakeful.agents import FINAL_RESULT
    from wakeful.providers.base import ModelReply

    if not result.output_truncated or not result.output_ref:
        return result.output
    for e in ts.events(agent, wake_id=result.wake_id):
        if e.kind == "tool_result" and e.tool_name == FINAL_RESULT and not e.is_error:
            return e.text
    return ModelReply.model_validate_json(ts.get_blob(result.output_ref)).text


def wake_failure(agent: str, result: WakeResult) -> str:
    """One line: which wake (or trigger) of ``agent`` did not succeed, how, and why."""
    status, _, detail = result.status.partition(": ")
    reason = one_line(result.error or detail) or "no reason given"
    if not result.number:  # the trigger never started a wake
        return f"the trigger of {agent!r} was {status.replace('_', ' ')}: {reason}"
    return f"wake {result.number} of {agent!r} ended {status}: {reason}"


async def no_result(
    client: Client, runtime: AgentRuntime, task_queue: str, waited_s: float, exc: BaseException
) -> str:
    """Why a wake's result did not come: the agent's run ended, the wait timed out, or
    Temporal refused the call."""
    from temporalio.client import WorkflowExecutionStatus
    from temporalio.service import RPCError

    from wakeful.workflows.agent import workflow_id

    wid = workflow_id(runtime.tenant, runtime.name)
    try:
        status = (await client.get_workflow_handle(wid).describe()).status
    except RPCError:
        status = None
    if status is not None and status != WorkflowExecutionStatus.RUNNING:
        return (
            f"the workflow of agent {runtime.name!r} is {status.name.lower()} (workflow id"
            f" {wid!r}), so this wake has no result; trigger again to start a new run"
        )
    if isinstance(exc, RPCError) and "Workflow Task in failed state" in exc.message:
        # The agent's workflow fails every workflow task: its code or its input is broken,
        # and no trigger is taken until that is fixed. The worker's log has the failure.
        return (
            f"the workflow of agent {runtime.name!r} (workflow id {wid!r}) is failing its"
            " workflow tasks, so it takes no trigger; read the worker's log for the failure,"
            " fix and restart the worker, or terminate the workflow"
            f" (`temporal workflow terminate --workflow-id '{wid}'`) to start afresh"
        )
    if isinstance(exc, RPCError):
        return (
            f"Temporal refused the wake of {runtime.name!r} ({exc.status.name}:"
            f" {one_line(exc.message)[:160]})"
        )
    return (
        f"the wake of {runtime.name!r} did not finish within {waited_s:g}s (it may still run;"
        f" see `wakeful agent show {runtime.name}`); is a worker running on task queue"
        f" {task_queue!r}? Raise --timeout, or start one with `wakeful worker --agents ...`"
    )


def worker(
    agents: str = typer.Option(..., "--agents", help="package.module:registry to serve."),
) -> None:
    """Run a worker serving the given agents until interrupted."""
    friendly(_worker)(agents)


def _worker(agents: str) -> None:
    from wakeful.worker.serve import serve

    registry = load_registry(agents)
    progress(f"serving {', '.join(a.name for a in registry)}")
    asyncio.run(serve(settings(), registry))
    progress("worker stopped")
