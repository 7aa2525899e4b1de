"""A worker in a process of its own, so a test can SIGKILL it mid-wake.

Both sides live here. The test side writes a :func:`process_config`, starts a worker script
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
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import make_deps, wait_for_marker
from wakeful.agents import Agent, AgentRegistry
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import connect
from wakeful.worker.worker import build_worker

READY = "worker-ready"


def process_config(
    temporal: WorkflowEnvironment,
    *,
    tenant: str,
    markers: Path,
    pg_url: str,
    sim: SimulatorServer,
    key: str,
    queue: str,
    workdir: Path | None = None,
) -> dict[str, str]:
    """What a worker process needs to serve ``tenant``'s agent on ``queue``: the database,
    the simulator under API key ``key``, the Temporal server, and the directory its tools
    and the process itself leave marker files in."""
    cfg = {
        "tenant": tenant,
        "markers": str(markers),
        "db": pg_url,
        "sim": sim.base_url,
        "key": key,
        "queue": queue,
        "temporal": temporal.client.service_client.config.target_host,
        "namespace": temporal.client.namespace,
    }
    return cfg if workdir is None else cfg | {"workdir": str(workdir)}


@asynccontextmanager
async def worker_process(
    script: Path, cfg: dict[str, str]
) -> AsyncIterator[subprocess.Popen[bytes]]:
    """Run the worker script ``script`` with ``cfg`` for the block, once it says it is ready.
    A process still alive when the block ends, however it ends, is killed."""
    proc = subprocess.Popen([sys.executable, str(script), json.dumps(cfg)])
    try:
        await wait_for_marker(Path(cfg["markers"]), READY, proc=proc)
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


async def _serve(agent: Agent, cfg: dict[str, str]) -> None:
    store = Store.connect(cfg["db"], migrate_schema=False)
    deps = make_deps(store, AgentRegistry([agent]), _SimAddress(cfg["sim"]), cfg["key"])  # type: ignore[arg-type]
    client = await connect(cfg["temporal"], cfg["namespace"])
    (Path(cfg["markers"]) / READY).touch()
    await build_worker(client, deps, cfg["queue"]).run()


def serve_from_argv(agent_for: Callable[[dict[str, str]], Agent]) -> None:
    """The worker process's main: read the config from ``argv[1]``, build the agent with
    ``agent_for(cfg)`` and serve it on the config's queue until killed."""
    cfg = json.loads(sys.argv[1])
    asyncio.run(_serve(agent_for(cfg), cfg))
