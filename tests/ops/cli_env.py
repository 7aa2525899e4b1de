"""Running the ``wakeful`` command in tests: explicit settings, in-process or as a process.

In-process (``run``) is typer's ``CliRunner``; ``wakeful`` runs the installed console script
in a child process, as a user's shell does, so its real exit status is seen.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from tests.ops.webhook_secrets import SECRET
from wakeful.cli.main import app
from wakeful.testing.simulator.server import SimulatorServer

AGENTS = "tests.ops.cli_agents:registry"
STOCK_AGENTS = "tests.ops.cli_agents:stock"  # what the shared `stock_worker` serves
ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
# What the README's CLI section documents: 0 ok, 1 the command reports a failure or a
# difference, 2 misuse, 3 a server is down or refused, 130 interrupted.
DOCUMENTED_EXIT_CODES = frozenset({0, 1, 2, 3, 130})


def clear_wakeful_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unset every ``WAKEFUL_*`` variable for the test, so only explicit settings count."""
    for name in list(os.environ):
        if name.startswith("WAKEFUL_"):
            monkeypatch.delenv(name)


def make_env(
    pg_url: str, temporal_address: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    """Explicit settings for one CLI session: external servers only, a fresh tenant."""
    clear_wakeful_env(monkeypatch)
    return {
        "WAKEFUL_DATABASE_URL": pg_url,
        "WAKEFUL_TEMPORAL_ADDRESS": temporal_address,
        "WAKEFUL_QDRANT_URL": "http://127.0.0.1:9",
        "WAKEFUL_STATE_DIR": str(tmp_path / "state"),
        "WAKEFUL_TENANT": f"cli-{uuid.uuid4().hex[:8]}",
        "WAKEFUL_TASK_QUEUE": f"q-{uuid.uuid4().hex[:8]}",
        "WAKEFUL_WEBHOOK_SECRET": SECRET,
    }


def run(args: list[str], env: dict[str, str]) -> Result:
    return CliRunner().invoke(app, args, env=env)


def shell(script: str, env: dict[str, str], cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """Run a bash ``script`` with the installed ``wakeful`` first on PATH."""
    path = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    return subprocess.run(
        ["bash", "-c", script],
        env=os.environ | env | {"PATH": path},
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def one_line_error(result: Result, code: int, says: str) -> None:
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert says in lines[0], lines[0]
    assert "Traceback" not in result.output


def simulated_worker_env(env: dict[str, str], sim: SimulatorServer) -> dict[str, str]:
    """``env`` for a ``wakeful worker`` process whose Anthropic calls the simulator answers:
    a throwaway key, the simulator's URL, and no Qdrant URL (nothing listens there)."""
    return {k: v for k, v in env.items() if k != "WAKEFUL_QDRANT_URL"} | {
        "ANTHROPIC_API_KEY": f"k-{uuid.uuid4().hex[:8]}",
        "ANTHROPIC_BASE_URL": sim.base_url,
    }


def worker_command(agents: str) -> list[str]:
    """``wakeful worker --agents AGENTS``, run by this interpreter."""
    return [sys.executable, "-m", "wakeful.cli.main", "worker", "--agents", agents]


@dataclass
class WorkerProcess:
    """A worker started by :func:`cli_worker`; ``said`` is its stderr once it stopped."""

    proc: subprocess.Popen[str]
    said: str = ""

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode


@contextmanager
def cli_worker(
    command: list[str],
    env: dict[str, str],
    *,
    cwd: Path = ROOT,
    start_within_s: float = 60,
    process_env: dict[str, str] | None = None,
    what: str = "the worker",
) -> Iterator[WorkerProcess]:
    """Run a worker process until the block ends, as a shell or ``docker stop`` would.

    Entering waits until ``wakeful health --worker`` (with ``env``) sees it poll its queue;
    ``start_within_s`` is a failure timeout, not a sync point. Leaving sends SIGTERM and
    waits up to 60 s for it to exit (then kills it). The process runs with ``env`` and
    ``process_env`` over this process's environment; ``what`` names it in a failure.
    """
    proc = subprocess.Popen(
        command,
        env=os.environ | env | (process_env or {}),
        cwd=cwd,
        stderr=subprocess.PIPE,
        text=True,
    )
    worker = WorkerProcess(proc)
    try:
        deadline = time.monotonic() + start_within_s
        while run(["health", "--worker"], env).exit_code != 0:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, f"{what} never polled its task queue"
            time.sleep(0.5)
        yield worker
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            _, worker.said = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, worker.said = proc.communicate()


def worker_refuses(agents: str, env: dict[str, str]) -> str:
    """Run ``wakeful worker``; it must exit 2 at start with one ``error:`` line (returned)."""
    done = subprocess.run(
        worker_command(agents),
        env=os.environ | env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    lines = [line for line in done.stderr.strip().splitlines() if line]
    errors = [line for line in lines if line.startswith("error: ")]
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
    return errors[0]
