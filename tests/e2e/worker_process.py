"""A worker in a process of its own, so a test can SIGKILL it mid-wake.

Both sides live here. The test side writes a :func:`fresh_process_config`, starts a worker script
with :func:`worker_process` (which waits for it to be ready and kills it at the end) and kills
it with :func:`sigkill` at the moment it wants. The script side (``worker_proc.py`` and its
kind) builds its agent from the config and hands it to :func:`serve_from_argv`.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass
from datetime import timedelta
from pathlib import Path

from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import make_deps, wait_for_marker
from wakeful.agents import Agent, AgentRegistry
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import connect
from wakeful.worker.worker import build_worker

READY = "worker-ready"
# How long a workflow task waits for the worker process that has its workflow cached: these
# processes are SIGKILLed, and after that each of their workflows' next task waits this long
# for the dead process before a live worker takes it (Temporal's default is 10 s). What the
# tests check, that the next worker finishes the work and records each step once, is the
# same at any value; a live worker whose task waited longer than this is handed it anew.
STICKY_TIMEOUT = timedelta(seconds=2)


@dataclass(frozen=True)
class ProcessConfig:
    """What a worker process needs to serve ``tenant``'s agent on ``queue``: the database
    (``db``), the simulator (``sim``, its URL) under API key ``key``, the Temporal server,
    the directory its tools and the process itself leave marker files in, and the agent's
    work directory if it has one."""

    tenant: str
    markers: Path
    queue: str
    key: str
    db: str
    sim: str
    temporal: str
    namespace: str
    workdir: str = ""

    def as_json(self) -> str:
        """The command-line argument the worker script reads back with ``json.loads``."""
        return json.dumps(asdict(self) | {"markers": str(self.markers)})

    async def connect(self) -> Client:
        """A client of the config's namespace made by Wakeful's own ``connect``, as the
        worker process makes its own: every client and worker of a namespace must share
        one data converter (the codec)."""
        return await connect(self.temporal, self.namespace)

    @classmethod
    def from_json(cls, text: str) -> ProcessConfig:
        fields = json.loads(text)
        return cls(**(fields | {"markers": Path(fields["markers"])}))


def fresh_process_config(
    temporal: WorkflowEnvironment,
    sim: SimulatorServer,
    pg_url: str,
    tmp_path: Path,
    *,
    tenant_prefix: str,
    workdir: Path | None = None,
) -> ProcessConfig:
    """A :class:`ProcessConfig` for a fresh tenant (``<tenant_prefix>-…``), task queue and
    simulator API key, with a new, empty ``markers`` directory under ``tmp_path``."""
    markers = tmp_path / "markers"
    markers.mkdir()
    return ProcessConfig(
        tenant=f"{tenant_prefix}-{uuid.uuid4().hex[:8]}",
        markers=markers,
        queue=f"q-{uuid.uuid4().hex[:8]}",
        key=uuid.uuid4().hex,
        db=pg_url,
        sim=sim.base_url,
        temporal=temporal.client.service_client.config.target_host,
        namespace=temporal.client.namespace,
        workdir="" if workdir is None else str(workdir),
    )


@asynccontextmanager
async def worker_process(
    script: Path, cfg: ProcessConfig, *args: str
) -> AsyncIterator[subprocess.Popen[bytes]]:
    """Run the worker script ``script`` with ``cfg`` (and ``args`` after it) for the block,
    once it says it is ready. A process still alive when the block ends, however it ends,
    is killed."""
    proc = subprocess.Popen([sys.executable, str(script), cfg.as_json(), *args])
    try:
        await wait_for_marker(cfg.markers, READY, proc=proc)
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()


def sigkill(proc: subprocess.Popen[bytes]) -> None:
    """Kill the worker process with no chance to clean up, and reap it."""
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


class _SimAddress:
    """All :func:`make_deps` reads of a simulator: where it listens."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url


async def _serve(agent: Agent, cfg: ProcessConfig) -> None:
    store = Store.connect(cfg.db, migrate_schema=False)
    deps = make_deps(store, AgentRegistry([agent]), _SimAddress(cfg.sim), cfg.key)  # type: ignore[arg-type]
    client = await cfg.connect()
    (cfg.markers / READY).touch()
    await build_worker(
        client, deps, cfg.queue, sticky_queue_schedule_to_start_timeout=STICKY_TIMEOUT
    ).run()


def serve_from_argv(agent_for: Callable[[ProcessConfig], Agent]) -> None:
    """The worker process's main: read the config from ``argv[1]``, build the agent with
    ``agent_for(cfg)`` and serve it on the config's queue until killed."""
    cfg = ProcessConfig.from_json(sys.argv[1])
    asyncio.run(_serve(agent_for(cfg), cfg))
