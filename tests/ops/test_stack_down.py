"""The first hour from a fresh clone, with the virtualenv not active: ``wakeful demo`` on the
embedded stack prints commands that work as printed and says it left Postgres and Temporal
running; after ``wakeful stack down`` a command that only reads the project says the stack
is down (and how to start it) instead of starting it again without a word; a command that
needs the database alone starts Postgres, not Temporal.

Every command runs as a process with ``PATH`` lacking the virtualenv's ``bin``, as a shell
where ``.venv/bin/wakeful demo`` was typed after a fresh clone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.ops.cli_env import BIN

WAKEFUL = str(BIN / "wakeful")  # what works with the virtualenv not active
ROOT = Path(__file__).resolve().parents[2]
AGENTS = "tests.ops.cli_agents:registry"


def _env(tmp_path: Path, path: str) -> dict[str, str]:
    plain = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("WAKEFUL_", "TEMPORAL_", "ANTHROPIC_", "OPENAI_"))
    }
    return plain | {
        "PATH": path,
        "WAKEFUL_STATE_DIR": str(tmp_path / ".wakeful"),
        "TEMPORAL_CONFIG_FILE": str(tmp_path / "no-temporal-profiles.toml"),
    }


def _wakeful(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "wakeful.cli.main", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_the_demo_then_stack_down_says_what_runs_and_how_to_start_it(tmp_path: Path) -> None:
    bare = _env(tmp_path, "/usr/bin:/bin")  # the virtualenv is not active
    try:
        demo = _wakeful(["demo"], bare, tmp_path)
        assert demo.returncode == 0, demo.stdout + demo.stderr
        assert f"Inspect: {WAKEFUL} explain demo-scout --wake 5" in demo.stdout
        assert (
            "The embedded Postgres and Temporal keep running for the commands above;"
            f" `{WAKEFUL} stack down` stops them (the state stays)."
        ) in demo.stdout
        down = _wakeful(["stack", "down"], bare, tmp_path)
        assert (down.returncode, down.stdout) == (0, "stopped\n"), down.stderr
        read = _wakeful(["agent", "list"], bare, tmp_path)
        assert read.returncode == 2, read.stdout + read.stderr
        (line,) = read.stderr.splitlines()
        assert line.startswith("error: the embedded stack of ") and " is down " in line
        assert line.endswith(f"start it with `{WAKEFUL} stack up`"), line
        status = _wakeful(["stack", "status"], bare, tmp_path)
        pieces = {row.split()[0]: row.split()[2] for row in status.stdout.splitlines()[:2]}
        assert pieces == {"postgres": "stopped", "temporal": "stopped"}, status.stdout
        # With the virtualenv's bin first on PATH, the same hint is the plain command.
        active = _env(tmp_path, f"{BIN}{os.pathsep}/usr/bin:/bin")
        hint = _wakeful(["agent", "list"], active, tmp_path).stderr
        assert hint.rstrip().endswith("start it with `wakeful stack up`"), hint
        # A command that sets the project up and needs the database alone starts Postgres
        # again, and not Temporal: it would wait for a server it never uses.
        agents = bare | {"WAKEFUL_TENANT": "acme", "PYTHONPATH": str(ROOT)}
        create = _wakeful(["agent", "create", "--agents", AGENTS], agents, tmp_path)
        assert create.returncode == 0, create.stdout + create.stderr
        listed = _wakeful(["agent", "list"], agents, tmp_path)
        assert (listed.returncode, "clerk" in listed.stdout) == (0, True), listed.stderr
        status = _wakeful(["stack", "status"], bare, tmp_path)
        pieces = {row.split()[0]: row.split()[2] for row in status.stdout.splitlines()[:2]}
        assert pieces == {"postgres": "running", "temporal": "stopped"}, status.stdout
    finally:
        _wakeful(["stack", "down"], bare, tmp_path)
