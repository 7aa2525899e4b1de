"""Running the ``wakeful`` command in tests: explicit settings, in-process or as a process.

In-process (``run``) is typer's ``CliRunner``; ``wakeful`` runs the installed console script
in a child process, as a user's shell does, so its real exit status is seen.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from tests.ops.conftest import SECRET
from wakeful.cli.main import app

AGENTS = "tests.ops.cli_agents:registry"
ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
# What the README's CLI section documents: 0 ok, 1 the command reports a failure or a
# difference, 2 misuse, 3 a server is down or refused, 130 interrupted.
DOCUMENTED_EXIT_CODES = frozenset({0, 1, 2, 3, 130})


def make_env(
    pg_url: str, temporal_address: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    """Explicit settings for one CLI session: external servers only, a fresh tenant."""
    for name in list(os.environ):
        if name.startswith("WAKEFUL_"):
            monkeypatch.delenv(name)
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
