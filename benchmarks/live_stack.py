"""The live stack the end-to-end benchmarks run on: an embedded Postgres, a Temporal dev
server, and the provider simulator in a process of its own (as a provider is: its work never
competes with the worker's for this process's interpreter lock).

Progress and the servers' banners go to stderr: stdout is for the benchmark's JSON.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wakeful.substrate.store import Store
from wakeful.worker.ports import port_accepts

__all__ = ["LiveStack", "live_stack", "say", "workspace"]

_WORDS = (
    "service deploy rollback latency budget window cache token replica shard queue retry "
    "timeout incident owner runbook metric alert config migration index summary decision"
).split()


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def workspace(root: Path, files: int, size: int) -> Path:
    """``files`` markdown files of about ``size`` bytes each (``doc00.md`` ...) in ``root``."""
    for i in range(files):
        words = [_WORDS[(i * 7 + j * 13) % len(_WORDS)] for j in range(size // 8)]
        lines = [" ".join(words[k : k + 12]) for k in range(0, len(words), 12)]
        (root / f"doc{i:02d}.md").write_text(f"Document {i}\n\n" + "\n".join(lines) + "\n")
    return root


@dataclass
class LiveStack:
    client: Any  # a Temporal client, on Wakeful's data converter
    store: Store
    sim_url: str
    sim_pid: int
    postgres_data: Path
    root: Path  # a scratch directory, removed with the stack
    database_url: str = ""  # the embedded Postgres, for worker processes of a bench


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Point fd 1 at stderr while a child process is spawned (it inherits the fd)."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


@contextlib.contextmanager
def _simulator_process(startup_timeout: float = 20.0) -> Iterator[tuple[str, int]]:
    """``python -m wakeful.testing.simulator`` on a free loopback port: (base URL, pid)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "wakeful.testing.simulator", "--port", str(port)],
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + startup_timeout
        while not port_accepts("127.0.0.1", port):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the provider simulator did not start on 127.0.0.1:{port}")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}", proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@contextlib.asynccontextmanager
async def live_stack(prefix: str = "wkbench") -> AsyncIterator[LiveStack]:
    from wakeful.testing.servers import embedded_postgres, temporal_dev_server

    async with contextlib.AsyncExitStack() as stack:
        pg = stack.enter_context(embedded_postgres(prefix))
        with _stdout_to_stderr():  # the dev server prints a banner
            env = await stack.enter_async_context(temporal_dev_server())
        store = Store.connect(pg.url)
        stack.callback(store.close)
        sim_url, sim_pid = stack.enter_context(_simulator_process())
        yield LiveStack(env.client, store, sim_url, sim_pid, pg.data_dir, pg.root, pg.url)
