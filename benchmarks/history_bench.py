"""``wakeful bench history``: workflow history per wake, and wake-cycle overhead.

Runs one agent through a 50-wake session on a real Temporal dev server with an embedded
Postgres, the real worker and activities, and the provider simulator as the model (the
Anthropic SDK over loopback HTTP, to a simulator in a process of its own, as a provider is:
its work never competes with the worker's for this process's interpreter lock). Every wake
asks the agent to read a file and summarise it (two model calls and one tool call); the
session's windows grow with what it read, up to the compile budget. Two workspaces are
run — small files and large files — to show that the history grows per wake by a
constant, not by the window size (the windows, outputs and tool results are in the
substrate; the history holds ids and hashes). The client and worker use Wakeful's data
converter, as a deployment does: payloads are compressed (:mod:`wakeful.worker.codec`).

A third run repeats the large files with the agent's model calls as local activities
(``Agent(local_model_calls=True)``, see :mod:`wakeful.workflows.retries`): the same wakes
without a task-queue round trip per model call. A fourth runs the workflows outside
Temporal's sandbox (``WAKEFUL_WORKFLOW_SANDBOX=false``), and a fifth does both.

Reported (for the large-file run, and per run under ``runs``):

* ``history_bytes_per_wake`` — the agent workflow's history (protobuf bytes, what Temporal's
  size limits count) divided by the wakes; ``history_json_bytes_per_wake`` the same as JSON;
  ``history_bytes_per_model_call`` divides by model calls instead, and
  ``history_bytes_per_wake_by_event`` says which events the bytes are in;
* ``window_tokens_p50`` / ``window_tokens_max`` — input tokens of the compiled windows;
* ``overhead_p50_ms`` / ``overhead_p90_ms`` — a wake's wall time (from the client's update
  to its result) minus the time spent inside the model provider: Temporal round trips,
  compiles, substrate reads and writes, the tool;
* ``token_miscount_pct`` — the compiler's count of each window against what the provider
  billed for it, in % of the bill (p50, most under-counted, most over-counted; > 0 under);
* ``process_cpu_ms_per_wake`` — CPU time of this process (the worker and the client, the
  provider SDK's work included) per wake: on a machine whose cores the Temporal server,
  Postgres and the simulator share with it, wall time is partly waiting for a core;
* ``stack_cpu_ms_per_wake`` — CPU time per wake of every process of the stack (this one,
  the Temporal server, Postgres with its backends, the simulator) and their ``total``;
  ``cpu_floor_ms`` is that total over the machine's cores: the wall time a wake could not
  go under even if every core were busy with it all the time.

Progress goes to stderr; ``run`` returns the JSON object.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from benchmarks.live_stack import live_stack, say, workspace
from wakeful.activities.deps import ActivityDeps
from wakeful.agents import Agent, AgentRegistry
from wakeful.compiler.blocks import Goal, GoalKind
from wakeful.contracts import Trigger
from wakeful.demo.agent import INSTRUCTIONS
from wakeful.demo.tools import DEMO_TOOLS
from wakeful.providers.base import ModelProvider, ModelReply
from wakeful.providers.registry import build_provider
from wakeful.substrate.store import Store
from wakeful.tokenizers import BpeCounter

__all__ = ["run"]

_FILES = 10
# (label, bytes per file, model calls as local activities, workflows in Temporal's sandbox)
_RUNS = (
    ("small", 1_000, False, True),
    ("large", 24_000, False, True),
    ("large_local", 24_000, True, True),
    ("large_unsandboxed", 24_000, False, False),
    ("large_local_unsandboxed", 24_000, True, False),
)


@dataclass
class StackCpu:
    """CPU seconds used so far by each process of the stack, read from the OS."""

    postgres_data: Path
    simulator_pid: int

    def _processes(self) -> dict[str, list[psutil.Process]]:
        me = psutil.Process()
        temporal = [c for c in me.children(recursive=True) if c.name().startswith("temporal")]
        found: dict[str, list[psutil.Process]] = {
            "worker": [me],
            "temporal": temporal,
            "simulator": [psutil.Process(self.simulator_pid)],
        }
        pid_file = self.postgres_data / "postmaster.pid"
        postmaster = psutil.Process(int(pid_file.read_text().split()[0]))
        found["postgres"] = [postmaster, *postmaster.children(recursive=True)]
        return found

    def sample(self) -> dict[tuple[str, int], float]:
        """CPU seconds by (piece, pid); a backend that started since counts from zero."""
        used: dict[tuple[str, int], float] = {}
        for piece, processes in self._processes().items():
            for proc in processes:
                try:
                    t = proc.cpu_times()
                except psutil.NoSuchProcess:
                    continue
                used[(piece, proc.pid)] = t.user + t.system
        return used

    @staticmethod
    def per_wake(
        before: dict[tuple[str, int], float], after: dict[tuple[str, int], float], wakes: int
    ) -> dict[str, float]:
        by_piece: dict[str, float] = {}
        for (piece, pid), seconds in after.items():
            spent = seconds - before.get((piece, pid), 0.0)
            by_piece[piece] = by_piece.get(piece, 0.0) + spent
        out = {k: round(v * 1000 / wakes, 1) for k, v in sorted(by_piece.items())}
        out["total"] = round(sum(by_piece.values()) * 1000 / wakes, 1)
        return out


@dataclass
class TimedProvider:
    """The real provider, timed: the bench subtracts model time from wake time."""

    inner: ModelProvider
    name: str = "anthropic"
    spent: list[float] = field(default_factory=list)

    async def complete(self, request: dict[str, Any]) -> ModelReply:
        start = time.perf_counter()
        try:
            return await self.inner.complete(request)
        finally:
            self.spent.append(time.perf_counter() - start)


async def _session(
    client: Any,
    store: Store,
    sim_url: str,
    workdir: Path,
    wakes: int,
    label: str,
    stack: StackCpu,
    *,
    local_model_calls: bool = False,
    sandboxed: bool = True,
) -> dict[str, Any]:
    from wakeful.worker.client import wake
    from wakeful.worker.serve import register_agent
    from wakeful.worker.worker import build_worker
    from wakeful.workflows.agent import workflow_id

    tenant = f"bench-{uuid.uuid4().hex[:8]}"
    agent = Agent(
        name="historian",
        instructions=INSTRUCTIONS,
        tools=DEMO_TOOLS,
        workdir=str(workdir),
        tenant=tenant,
        local_model_calls=local_model_calls,
    )
    ts = store.tenant(tenant)
    register_agent(ts, agent)
    timed = TimedProvider(build_provider("anthropic", api_key=tenant, base_url=sim_url))
    deps = ActivityDeps(
        store=store,
        agents=AgentRegistry([agent]),
        providers=lambda name: timed,
        counter=BpeCounter(),
    )
    files = [f"doc{i:02d}.md" for i in range(_FILES)]
    overhead: list[float] = []
    queue = f"bench-{uuid.uuid4().hex[:8]}"
    async with build_worker(client, deps, queue, sandboxed=sandboxed):
        cpu, stack_before = time.process_time(), stack.sample()
        for i in range(wakes):
            trigger = Trigger(
                goal=Goal(
                    kind=GoalKind.MESSAGE,
                    text=f"read_file {files[i % len(files)]} and summarise it.",
                ),
                idempotency_key=f"{label}-{i}",
            )
            before = len(timed.spent)
            start = time.perf_counter()
            result = await wake(client, agent.runtime(), trigger, queue)
            wall = time.perf_counter() - start
            overhead.append(wall - sum(timed.spent[before:]))
            if result.status != "done":
                raise RuntimeError(f"wake {result.wake_id} ended {result.status}")
            if (i + 1) % 10 == 0:
                say(f"  {label}: wake {i + 1}/{wakes}")
        cpu = time.process_time() - cpu
        stack_cpu = StackCpu.per_wake(stack_before, stack.sample(), wakes)
        handle = client.get_workflow_handle(workflow_id(tenant, agent.name))
        history = await handle.fetch_history()
    await timed.inner.aclose()  # type: ignore[attr-defined]
    proto = sum(e.ByteSize() for e in history.events)
    by_kind: dict[str, int] = {}
    for e in history.events:
        kind = (e.WhichOneof("attributes") or "").removesuffix("_event_attributes")
        by_kind[kind] = by_kind.get(kind, 0) + e.ByteSize()
    tokens = [c.input_tokens for w in ts.wakes(agent.name) for c in ts.compiles(w.wake_id)]
    calls = sum(len(ts.model_calls(w.wake_id)) for w in ts.wakes(agent.name))
    miscount = _miscount(ts, agent.name)
    ms = sorted(x * 1000 for x in overhead)
    return {
        "wakes": wakes,
        "history_events": len(history.events),
        "history_bytes_per_wake": round(proto / wakes),
        "history_json_bytes_per_wake": round(len(history.to_json()) / wakes),
        "model_calls_per_wake": calls / wakes,
        "history_bytes_per_model_call": round(proto / calls),
        "window_tokens_p50": round(statistics.median(tokens)),
        "window_tokens_max": max(tokens),
        "overhead_p50_ms": round(statistics.median(ms), 1),
        "overhead_p90_ms": round(ms[int(len(ms) * 0.9) - 1], 1),
        "process_cpu_ms_per_wake": round(cpu * 1000 / wakes, 1),
        "token_miscount_pct": miscount,
        "stack_cpu_ms_per_wake": stack_cpu,
        "cpu_floor_ms": round(stack_cpu["total"] / (os.cpu_count() or 1), 1),
        "history_bytes_per_wake_by_event": {
            k: round(v / wakes) for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1])
        },
    }


def _miscount(ts: Any, agent: str) -> dict[str, float]:
    """How far the compiler's count of each window is from what the provider billed for it
    (input, cache reads and cache writes), in % of the billed count: > 0 is under-counted."""
    errors = []
    for w in ts.wakes(agent):
        billed = {
            m.call_index: m.input_tokens + m.cache_read_input_tokens + m.cache_creation_input_tokens
            for m in ts.model_calls(w.wake_id)
        }
        for c in ts.compiles(w.wake_id):
            if billed.get(c.call_index):
                errors.append((billed[c.call_index] - c.input_tokens) * 100 / billed[c.call_index])
    return {
        "p50": round(statistics.median(errors), 2),
        "most_under": round(max(errors), 2),
        "most_over": round(min(errors), 2),
    }


async def _run(wakes: int) -> dict[str, Any]:
    runs: dict[str, Any] = {}
    async with live_stack("wkhb") as live:
        stack = StackCpu(postgres_data=live.postgres_data, simulator_pid=live.sim_pid)
        for label, size, local, sandboxed in _RUNS:
            ws = live.root / label
            ws.mkdir()
            say(f"{label} files ({size} bytes each), {wakes} wakes")
            runs[label] = await _session(
                live.client,
                live.store,
                live.sim_url,
                workspace(ws, _FILES, size),
                wakes,
                label,
                stack,
                local_model_calls=local,
                sandboxed=sandboxed,
            )
    # The machine's load when the run ended: overhead is wall time, so say how busy it was.
    out: dict[str, Any] = runs["large"] | {
        "runs": runs,
        "load_avg_1m": os.getloadavg()[0],
        "cpu_count": os.cpu_count(),
    }
    return out


def run(wakes: int = 50) -> dict[str, Any]:
    return asyncio.run(_run(wakes))
