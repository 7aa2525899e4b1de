"""``wakeful --help`` stays light: the command line imports the SDKs, Temporal, the database
drivers and the servers only inside the commands that use them, so asking for help (or
mistyping a command) answers at once. Checked by what a fresh interpreter has imported, not
by timing, and every registered command still prints its own help as a process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import typer

from benchmarks.cli_bench import HEAVY_PACKAGES
from tests.ops.cli_env import BIN, ROOT
from wakeful.cli.main import app

# In a fresh interpreter: import the command line, render the help of every command
# in-process, and name the heavy packages that got imported.
_PROBE = """
import json, sys
from typer.testing import CliRunner
from wakeful.cli.main import app
paths = json.loads(sys.argv[1])
codes = [CliRunner().invoke(app, [*p, "--help"]).exit_code for p in paths]
heavy = json.loads(sys.argv[2])
print(json.dumps({"codes": codes, "loaded": sorted(h for h in heavy if h in sys.modules)}))
"""


def command_paths() -> list[list[str]]:
    """Every registered command and group, as the words that name it (the root is [])."""
    paths: list[list[str]] = []

    def walk(cmd: Any, path: list[str]) -> None:
        paths.append(path)
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):  # a group's
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return paths


def _help_of(path: list[str]) -> str:
    cmd: Any = typer.main.get_command(app)
    for word in path:
        cmd = cmd.commands[word]
    return str(cmd.help or "").split("\n\n")[0]


def _words(text: str) -> str:
    """Text without the help's box drawing and line wrapping."""
    return " ".join(text.replace("│", " ").split())


def test_importing_the_command_line_loads_no_sdk_server_or_driver() -> None:
    paths = command_paths()
    probe = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(paths), json.dumps(HEAVY_PACKAGES)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert probe.returncode == 0, probe.stderr
    found = json.loads(probe.stdout)
    assert found["codes"] == [0] * len(paths), list(zip(paths, found["codes"], strict=True))
    assert found["loaded"] == [], f"`wakeful --help` imports {found['loaded']}"


def test_a_worker_imports_a_providers_sdk_only_when_it_builds_that_provider() -> None:
    """The SDKs' type modules are a large share of a worker's start-up: importing the
    worker loads neither, and building an Anthropic provider loads Anthropic's alone."""
    probe = (
        "import sys, json\n"
        "import wakeful.worker.serve\n"
        "from wakeful.providers.registry import build_provider\n"
        "before = sorted({'anthropic', 'openai'} & set(sys.modules))\n"
        "build_provider('anthropic', api_key='k', base_url='http://127.0.0.1:9')\n"
        "after = sorted({'anthropic', 'openai'} & set(sys.modules))\n"
        "print(json.dumps([before, after]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [[], ["anthropic"]]


def _help_process(path: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "wakeful"), *path, "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env=os.environ | {"COLUMNS": "200"},
    )


@pytest.fixture(scope="module")
def helps() -> dict[tuple[str, ...], subprocess.CompletedProcess[str]]:
    """``wakeful ... --help`` of every command, each a process of its own, run a few at a
    time (each is an interpreter starting: one per core keeps them all busy)."""
    paths = command_paths()
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return dict(zip((tuple(p) for p in paths), pool.map(_help_process, paths), strict=True))


@pytest.mark.parametrize("path", command_paths(), ids=lambda p: " ".join(p) or "wakeful")
def test_each_command_prints_its_help_as_a_process(
    path: list[str], helps: dict[tuple[str, ...], subprocess.CompletedProcess[str]]
) -> None:
    done = helps[tuple(path)]
    assert done.returncode == 0, done.stderr
    shown = _words(done.stdout)
    assert _words(f"Usage: wakeful {' '.join(path)}") in shown, done.stdout
    assert _words(_help_of(path)) in shown, done.stdout
    assert done.stderr == ""
