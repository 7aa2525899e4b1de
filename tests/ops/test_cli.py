"""The command line for daily use: JSON where a script wants it, and exit codes that mean
something (0 ok, 1 a reported difference, 2 misuse, 3 a server is down), with one line on
stderr instead of a traceback. Runs against the session's Postgres and Temporal."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import open_deps, serving
from tests.ops import cli_agents
from tests.ops.cli_env import (
    AGENTS,
    ROOT,
    clear_wakeful_env,
    cli_worker,
    one_line_error,
    run,
    simulated_worker_env,
    worker_command,
)
from tests.ops.hooks import event, signed, terminate
from tests.substrate.test_locomo_import import SAMPLE
from wakeful.agents import AgentRegistry
from wakeful.idempotency import trigger_key
from wakeful.substrate.store import Store
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import require_worker
from wakeful.worker.worker import build_worker
from wakeful.workflows.agent import workflow_id


@asynccontextmanager
async def _clerk_served(
    env: dict[str, str],
    temporal_dev: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,
    scope: str,
) -> AsyncIterator[AgentRegistry]:
    """``clerk``, created with the CLI, served by an in-process worker on the CLI's task
    queue (the simulator answering with the script under ``scope``); yields the registry.
    The agent's workflow is terminated when the block ends."""
    created = await asyncio.to_thread(run, ["agent", "create", "--agents", AGENTS], env)
    assert created.exit_code == 0
    agents = cli_agents.registry(env["WAKEFUL_TENANT"])
    async with (
        open_deps(store, agents, sim, scope) as deps,
        build_worker(temporal_dev.client, deps, env["WAKEFUL_TASK_QUEUE"]),
    ):
        try:
            yield agents
        finally:
            await terminate(temporal_dev.client, env["WAKEFUL_TENANT"], "clerk")


def test_agent_create_list_show(env: dict[str, str]) -> None:
    created = run(["agent", "create", "--agents", AGENTS, "--json"], env)
    assert created.exit_code == 0, created.output
    tenant = env["WAKEFUL_TENANT"]
    assert json.loads(created.stdout) == [{"tenant": tenant, "name": "clerk", "status": "created"}]
    again = run(["agent", "create", "--agents", AGENTS, "--json"], env)
    assert json.loads(again.stdout)[0]["status"] == "updated"
    listed = run(["agent", "list", "--json"], env)
    assert [r["name"] for r in json.loads(listed.stdout)] == ["clerk"]
    shown = run(["agent", "show", "clerk", "--json"], env)
    body = json.loads(shown.stdout)
    assert body["agent"]["name"] == "clerk" and body["wakes"] == []


def test_misuse_exits_2_with_one_line(env: dict[str, str]) -> None:
    one_line_error(run(["agent", "show", "ghost"], env), 2, "no agent 'ghost'")
    one_line_error(
        run(["agent", "create", "--agents", "nope"], env),
        2,
        "'module:registry' or 'path/to/file.py:registry'",
    )
    for args in (
        ["handoff", "show", "ghost"],
        ["explain", "ghost", "--wake", "1"],
        ["diff", "ghost", "--wake", "2", "--vs", "1"],
        ["replay", "ghost", "--wake", "1"],
    ):
        one_line_error(run(args, env), 2, "no agent 'ghost'")
    assert run(["agent", "create", "--agents", AGENTS], env).exit_code == 0
    one_line_error(run(["handoff", "show", "clerk"], env), 2, "no handoff note")
    one_line_error(run(["explain", "clerk", "--wake", "7"], env), 2, "has no wake number 7")
    bad = env | {"WAKEFUL_WEBHOOK_MAX_BODY_BYTES": "-1"}
    one_line_error(run(["agent", "list"], bad), 2, "WAKEFUL_WEBHOOK_MAX_BODY_BYTES")


def test_an_agents_module_that_does_not_import_is_one_line(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    modules = tmp_path / "mods"
    modules.mkdir()
    (modules / "typo_agents.py").write_text("import os\n\ndef broken(:\n    pass\n")
    (modules / "raising_agents.py").write_text("registry = undefined_name\n")
    monkeypatch.syspath_prepend(str(modules))
    typo = run(["agent", "create", "--agents", "typo_agents:registry"], env)
    one_line_error(typo, 2, "cannot load agents from 'typo_agents:registry'")
    assert "invalid syntax" in typo.stderr and "typo_agents.py, line 3" in typo.stderr
    raising = run(["worker", "--agents", "raising_agents:registry"], env)
    one_line_error(raising, 2, "importing raising_agents raised NameError")


def test_a_server_down_exits_3_with_one_line(env: dict[str, str]) -> None:
    db_down = env | {"WAKEFUL_DATABASE_URL": "postgresql://x:pw-hidden@127.0.0.1:1/db"}
    result = run(["agent", "list", "--json"], db_down)
    one_line_error(result, 3, "Postgres")
    assert "pw-hidden" not in result.output
    assert run(["agent", "create", "--agents", AGENTS], env).exit_code == 0
    temporal_down = env | {"WAKEFUL_TEMPORAL_ADDRESS": "127.0.0.1:1"}
    one_line_error(run(["trigger", "clerk", "-m", "hi", "--no-wait"], temporal_down), 3, "Temporal")


async def test_trigger_no_wait_answers_json(
    env: dict[str, str], temporal_dev: WorkflowEnvironment
) -> None:
    created = await asyncio.to_thread(run, ["agent", "create", "--agents", AGENTS], env)
    assert created.exit_code == 0
    args = ["trigger", "clerk", "-m", "hi", "--no-wait", "--key", "k-1", "--json"]
    result = await asyncio.to_thread(run, args, env)  # the CLI runs its own event loop
    try:
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout) == {"delivered": True, "idempotency_key": "k-1"}
    finally:
        handle = temporal_dev.client.get_workflow_handle(
            workflow_id(env["WAKEFUL_TENANT"], "clerk")
        )
        await handle.terminate("test over")


async def test_waiting_commands_refuse_at_once_when_no_worker_polls_the_queue(
    env: dict[str, str], temporal_dev: WorkflowEnvironment
) -> None:
    created = await asyncio.to_thread(run, ["agent", "create", "--agents", AGENTS], env)
    assert created.exit_code == 0
    queue = env["WAKEFUL_TASK_QUEUE"]
    # A short wait for a worker (a user's default is 5 s): the refusal is the same.
    short = env | {"WAKEFUL_WORKER_WAIT_S": "0.5"}
    for args in (["trigger", "clerk", "-m", "hi", "--key", "k-none"], ["consolidate", "clerk"]):
        result = await asyncio.to_thread(run, args, short)
        one_line_error(result, 3, f"no worker polls task queue {queue!r}")
        assert "waited 0.5 s, WAKEFUL_WORKER_WAIT_S" in result.stderr
        assert "wakeful worker --agents" in result.stderr
    # Nothing was delivered: the agent's workflow was never started.
    handle = temporal_dev.client.get_workflow_handle(workflow_id(env["WAKEFUL_TENANT"], "clerk"))
    with pytest.raises(RPCError, match="not found"):
        await handle.describe()


@pytest.mark.parametrize("command", [["trigger"], ["consolidate"], ["approve"]])
def test_waiting_commands_name_their_wait_for_a_worker_in_their_help(command: list[str]) -> None:
    shown = run([*command, "--help"], {"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "WAKEFUL_WORKER_WAIT_S seconds (default 5)" in " ".join(shown.output.split())


async def test_trigger_waits_for_the_wake_when_a_worker_serves_the_queue(
    env: dict[str, str], temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer
) -> None:
    args = ["trigger", "clerk", "-m", "hi", "--key", "k-served", "--json"]
    async with _clerk_served(env, temporal_dev, store, sim, uuid.uuid4().hex):
        result = await asyncio.to_thread(run, args, env)
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert (body["status"], body["number"], body["deduplicated"]) == ("done", 1, False)


def test_import_appends_a_locomo_file_once_and_refuses_bad_input(
    env: dict[str, str], tmp_path: Path, store: Store
) -> None:
    data = tmp_path / "conv.json"
    data.write_text(json.dumps([SAMPLE, SAMPLE | {"sample_id": "conv-y"}]))
    args = ["import", str(data), "--agent", "mem", "--sample", "conv-x", "--json"]
    first = run(args, env)
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout) == {"agent": "mem", "turns": {"conv-x": 3}}
    assert "created agent 'mem'" in first.stderr  # an agent to hold the history
    assert run(args, env).exit_code == 0  # again: the same turns, not twice
    events = store.tenant(env["WAKEFUL_TENANT"]).events("mem")
    assert [e.external_id for e in events] == ["D1:1", "D1:2", "D2:1"]

    one_line_error(run([*args[:4], "--sample", "conv-z"], env), 2, "has no sample 'conv-z'")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    one_line_error(run(["import", str(broken), "--agent", "mem"], env), 2, "is not JSON")
    assert len(store.tenant(env["WAKEFUL_TENANT"]).events("mem")) == 3  # nothing lost


def test_health_reports_each_piece(env: dict[str, str]) -> None:
    ok = run(["health", "--json"], env)
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout) == {"ok": True, "checks": {"postgres": "ok", "temporal": "ok"}}
    no_worker = run(["health", "--worker", "--json"], env)
    assert no_worker.exit_code == 3
    assert "no worker polls" in json.loads(no_worker.stdout)["checks"]["worker"]
    down = run(["health"], env | {"WAKEFUL_TEMPORAL_ADDRESS": "127.0.0.1:1"})
    assert down.exit_code == 3 and "temporal  unreachable" in down.stdout


def _serve(env: dict[str, str]) -> tuple[subprocess.Popen[str], int, list[str]]:
    """``ingress serve --port 0``: any free port, read from the line it prints (a port picked
    here could be taken by a test beside this one before the server binds it)."""
    server = subprocess.Popen(
        [sys.executable, "-m", "wakeful.cli.main", "ingress", "serve", "--port", "0"],
        env=os.environ | env,
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert server.stderr is not None
    said: list[str] = []
    for line in server.stderr:  # bounded by the test timeout; ends if the server dies
        said.append(line)
        if m := re.match(r"ingress listening on http://\S+?:(\d+) ", line):
            return server, int(m[1]), said
    raise AssertionError("".join(said))


def test_ingress_serve_runs_the_app_and_stops_cleanly(env: dict[str, str]) -> None:
    assert run(["agent", "create", "--agents", AGENTS], env).exit_code == 0
    server, port, said = _serve(env)
    base = f"http://127.0.0.1:{port}"
    try:
        # Listening before it printed its address: the first request is answered.
        assert httpx.get(f"{base}/healthz").status_code == 200
        assert httpx.get(f"{base}/readyz").json()["status"] == "ready"
        body = event("evt-cli", text="hello")
        accepted = httpx.post(f"{base}/hooks/clerk", content=body, headers=signed(body))
        assert accepted.status_code == 202, accepted.text
        busy = run(["ingress", "serve", "--port", str(port)], env)
        one_line_error(busy, 3, f"cannot listen on 127.0.0.1:{port}")
    finally:
        server.send_signal(signal.SIGTERM)  # what `docker stop` sends
        _, rest = server.communicate(timeout=60)
    assert server.returncode == 0, "".join(said) + rest
    assert "ingress listening on" in said[-1] and "ingress stopped" in rest


def test_the_demo_runs_offline_and_its_agent_carries_on(env: dict[str, str]) -> None:
    """The Quick start's main job, on the session's servers and an embedded Qdrant Edge
    shard: five wakes across two sessions, each model call through the real SDK to the
    simulator; run again, the same agent goes on from where it stopped."""
    env = {k: v for k, v in env.items() if k != "WAKEFUL_QDRANT_URL"}
    first = run(["demo"], env)
    assert first.exit_code == 0, first.output
    assert "5 wakes, 10 model calls" in first.stdout
    # A line per step on stderr while it runs; stdout stays the report.
    steps = [line for line in first.stderr.splitlines() if line.startswith("demo: ")]
    assert steps[0].startswith("demo: starting the embedded stack")
    assert [s.split(" of ")[0] for s in steps if s.startswith("demo: wake ")] == [
        f"demo: wake {i}/5" for i in range(1, 6)
    ]
    assert "demo: " not in first.stdout
    shown = json.loads(run(["agent", "show", "demo-scout", "--json"], env).stdout)
    assert [w["status"] for w in shown["wakes"]] == ["done"] * 5
    # Each call's cache outcome, from the simulator's counters: the agent's first call finds
    # nothing; the wake's next call, seconds later, reads what the first one wrote.
    explain = ["explain", "demo-scout", "--wake", "1"]
    cold = json.loads(run([*explain, "--call", "0", "--json"], env).stdout)["cache_outcome"]
    assert cold["cache_class"] == "cold_start", cold
    hit = json.loads(run([*explain, "--call", "1", "--json"], env).stdout)["cache_outcome"]
    assert hit["cache_class"] == "hit" and hit["read_tokens"] >= 0.9 * hit["could_read_tokens"]
    said = run([*explain, "--call", "1"], env)
    assert said.exit_code == 0 and said.stdout.splitlines()[-1].startswith("cache hit: read ")
    again = run(["demo"], env)
    assert again.exit_code == 0, again.output
    shown = json.loads(run(["agent", "show", "demo-scout", "--json"], env).stdout)
    assert len(shown["wakes"]) == 10


def test_the_demo_speaks_openai_when_asked(env: dict[str, str]) -> None:
    """``--provider openai``: an agent of its own, served through the OpenAI SDK; the
    simulator caches its prefix in 128-token steps, so later calls read from the cache."""
    env = {k: v for k, v in env.items() if k != "WAKEFUL_QDRANT_URL"}
    done = run(["demo", "--provider", "openai"], env)
    assert done.exit_code == 0, done.output
    assert "5 wakes, 10 model calls" in done.stdout
    assert "wakeful explain demo-scout-openai" in done.stdout
    shown = json.loads(run(["agent", "show", "demo-scout-openai", "--json"], env).stdout)
    assert [w["status"] for w in shown["wakes"]] == ["done"] * 5
    table = [line.split() for line in done.stdout.splitlines() if line[:4].strip().isdigit()]
    cache_reads = [int(row[-5]) for row in table]
    assert cache_reads[0] == 0 and all(r > 0 and r % 128 == 0 for r in cache_reads[1:])
    refused = run(["demo", "--provider", "gemini"], env)
    assert refused.exit_code == 2 and "gemini" in refused.output


def test_a_worker_stops_cleanly_on_sigterm(env: dict[str, str], sim: SimulatorServer) -> None:
    """``docker stop`` sends SIGTERM: the worker shuts down as on Ctrl-C and exits 0, rather
    than dying with its activities left to wait out their timeouts."""
    env = simulated_worker_env(env, sim)
    with cli_worker(worker_command(AGENTS), env) as worker:
        served = run(["trigger", "clerk", "-m", "hi", "--key", "k-sigterm", "--json"], env)
        assert served.exit_code == 0, served.output
        assert json.loads(served.stdout)["status"] == "done"
    assert worker.returncode == 0, worker.said
    said = worker.said
    assert "serving clerk" in said and "worker stopped" in said
    assert "Traceback" not in said


async def test_a_wake_that_does_not_end_done_exits_1_with_its_status_and_reason(
    env: dict[str, str], temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer
) -> None:
    """A refused model call ends the wake ``model_error``: the trigger says so in one line
    on stderr and exits 1, not 0; and a key given with ``--key`` is answered as given but
    stored and sent only as its digest."""
    key = uuid.uuid4().hex
    sim.simulator.set_script(
        Script.parse([{"error": {"status": 400, "message": "messages: too long"}, "times": 2}]),
        scope=key,
    )
    secret = f"sk-live-{uuid.uuid4().hex}"
    async with _clerk_served(env, temporal_dev, store, sim, key):
        failed = await asyncio.to_thread(run, ["trigger", "clerk", "-m", "hi"], env)
        as_json = await asyncio.to_thread(
            run, ["trigger", "clerk", "-m", "hi", "--key", secret, "--json"], env
        )
        handle = temporal_dev.client.get_workflow_handle(
            workflow_id(env["WAKEFUL_TENANT"], "clerk")
        )
        history = (await handle.fetch_history()).to_json()
    assert failed.exit_code == 1, failed.output
    assert failed.stdout == "" and "model_error" in failed.stderr  # no answer to print
    (error,) = [line for line in failed.stderr.splitlines() if line.startswith("error: ")]
    assert error.startswith("error: wake 1 of 'clerk' ended model_error: "), error
    assert "messages: too long" in error and "Traceback" not in failed.output
    assert as_json.exit_code == 1, as_json.output
    body = json.loads(as_json.stdout)
    assert (body["status"], body["idempotency_key"]) == ("model_error", secret)
    assert "messages: too long" in body["error"]
    wakes = store.tenant(env["WAKEFUL_TENANT"]).wakes("clerk")
    assert wakes[-1].idempotency_key == trigger_key("cli", secret)
    assert secret not in history and secret not in json.dumps(
        [w.model_dump(mode="json") for w in wakes]
    )


async def test_trigger_timeout_is_one_line(
    env: dict[str, str], temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer
) -> None:
    """A worker polled the queue a moment ago (so the trigger is delivered) but none runs
    now: ``--timeout`` ends the wait with one line and exit 3, not the SDK's traceback."""
    created = await asyncio.to_thread(run, ["agent", "create", "--agents", AGENTS], env)
    assert created.exit_code == 0
    agents = cli_agents.registry(env["WAKEFUL_TENANT"])
    async with (
        open_deps(store, agents, sim, uuid.uuid4().hex) as deps,
        serving(build_worker(temporal_dev.client, deps, env["WAKEFUL_TASK_QUEUE"])),
    ):
        # Until the worker's first poll reaches the server (slow on a loaded machine): a
        # bound for failing, not the thing under test.
        await require_worker(temporal_dev.client, env["WAKEFUL_TASK_QUEUE"], "test", grace_s=120)
        polled = await asyncio.to_thread(run, ["health", "--worker"], env)
        assert polled.exit_code == 0, polled.output
    try:
        late = await asyncio.to_thread(run, ["trigger", "clerk", "-m", "hi", "--timeout", "1"], env)
    finally:
        await terminate(temporal_dev.client, env["WAKEFUL_TENANT"], "clerk")
    assert late.exit_code == 3, late.output
    errors = [line for line in late.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [late.stderr.strip().splitlines()[-1]], late.stderr
    assert "the wake of 'clerk' did not finish within 1s" in errors[0]
    assert "Traceback" not in late.output


READ_ONLY = (
    ["agent", "list"],
    ["agent", "show", "clerk"],
    ["explain", "clerk", "--wake", "1"],
    ["handoff", "show", "clerk"],
    ["trigger", "clerk", "-m", "hi"],
    ["consolidate", "clerk", "--log", "5"],
    ["schedule", "list"],
    ["stack", "status"],
    ["stack", "down"],
)


@pytest.mark.parametrize("args", READ_ONLY, ids=lambda a: " ".join(a[:2]))
def test_commands_that_need_a_project_refuse_where_there_is_none(
    args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run from a folder with no ``.wakeful`` here or above (and no WAKEFUL_STATE_DIR), a
    command that only uses a project says so and how to fix it, instead of creating a state
    directory and starting a second, empty stack."""
    elsewhere = tmp_path / "not-a-project"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    clear_wakeful_env(monkeypatch)
    result = run(args, {"WAKEFUL_TENANT": "default"})
    one_line_error(result, 2, "no Wakeful state here or above")
    # the command as it works here: `wakeful`, or its path when PATH finds another or none
    assert re.search(r"`\S*wakeful stack up`", result.stderr), result.stderr
    assert "WAKEFUL_STATE_DIR" in result.stderr
    assert list(elsewhere.iterdir()) == []  # nothing created, nothing started


def test_a_misspelt_variable_is_warned_about(env: dict[str, str]) -> None:
    typo = env | {"WAKEFUL_DATABSE_URL": "postgresql://x@127.0.0.1:1/db"}
    result = run(["agent", "list"], typo)
    assert result.exit_code == 0, result.output
    assert result.stderr.strip().splitlines() == [
        "warning: WAKEFUL_DATABSE_URL is not a Wakeful setting and is ignored;"
        " did you mean WAKEFUL_DATABASE_URL?"
    ]


def test_a_retired_timeout_variable_names_what_replaced_it(env: dict[str, str]) -> None:
    """The model call's and the other activities' timeouts are not settings: a variable
    that once set them is named, with what to use instead, not silently ignored."""
    retired = env | {"WAKEFUL_MODEL_TIMEOUT_S": "600", "WAKEFUL_ACTIVITY_TIMEOUT_S": "600"}
    result = run(["agent", "list"], retired)
    assert result.exit_code == 0, result.output
    assert result.stderr.strip().splitlines() == [
        "warning: WAKEFUL_ACTIVITY_TIMEOUT_S is not read: each non-model activity's timeout"
        " is fixed for that activity (a tool's is its own timeout_s)",
        "warning: WAKEFUL_MODEL_TIMEOUT_S is not read: one model call attempt is bounded by"
        " WAKEFUL_MODEL_ATTEMPT_TIMEOUT_S",
    ]


async def test_trigger_prints_the_agents_answer_whole_and_the_client_returns_it(
    env: dict[str, str], temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer
) -> None:
    """The answer comes back: ``wakeful trigger`` prints it alone on stdout (the summary
    goes to stderr) and in ``--json``; an answer longer than a result carries is printed
    whole from the stored reply; ``wakeful.Client`` returns it in ``WakeResult.output``,
    and the same key asked again returns the first wake's result."""
    from wakeful import Client

    key = uuid.uuid4().hex
    long = " ".join(f"line {n}: checkout p99 is {200 + n} ms." for n in range(200))
    sim.simulator.set_script(
        Script.parse([{"text": "Checkout is healthy."}, {"text": long}, {"text": "Typed."}]),
        scope=key,
    )
    async with _clerk_served(env, temporal_dev, store, sim, key) as agents:
        plain = await asyncio.to_thread(run, ["trigger", "clerk", "-m", "status?"], env)
        whole = await asyncio.to_thread(run, ["trigger", "clerk", "-m", "details?", "--json"], env)
        client = Client(temporal_dev.client, task_queue=env["WAKEFUL_TASK_QUEUE"])
        clerk = agents.get(env["WAKEFUL_TENANT"], "clerk")
        handle = await client.start(clerk, "and now?", key="c-1")
        first = await handle.result()
        again = await client.wake(clerk, "and now?", key="c-1")
    assert plain.exit_code == 0, plain.output
    assert plain.stdout == "Checkout is healthy.\n"
    assert "wake 1 (" in plain.stderr and "done" in plain.stderr
    body = json.loads(whole.stdout)
    assert body["output"] == long and body["output_truncated"] is False  # printed whole
    assert (first.status, first.output, first.output_truncated) == ("done", "Typed.", False)
    assert first.output_ref == "" and handle.idempotency_key == "c-1"  # all there: no ref
    assert again == first  # the same wake: Temporal answers a repeated update with its result


async def test_a_handoff_succeeds_and_says_so(
    env: dict[str, str], temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer
) -> None:
    """``/handoff`` ends the session without a wake: the trigger exits 0 and says which
    session was handed off (it answered ``error: ... was handoff`` and exited 1); asked
    again with no session open, it says there was none, also exit 0."""
    key = uuid.uuid4().hex
    sim.simulator.set_script(Script.parse([{"text": "Checkout is healthy."}]), scope=key)
    async with _clerk_served(env, temporal_dev, store, sim, key):
        asked = await asyncio.to_thread(run, ["trigger", "clerk", "-m", "status?"], env)
        handed = await asyncio.to_thread(run, ["trigger", "clerk", "-m", "/handoff done"], env)
        again = await asyncio.to_thread(run, ["trigger", "clerk", "-m", "/handoff", "--json"], env)
    assert asked.exit_code == 0, asked.output
    assert handed.exit_code == 0, handed.output
    assert "error" not in handed.stderr and handed.stdout == ""
    session = store.tenant(env["WAKEFUL_TENANT"]).wakes("clerk")[-1].session_id
    assert f"handed off session {session} (handoff note " in handed.stderr, handed.stderr
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["status"] == "handoff: no open session"
