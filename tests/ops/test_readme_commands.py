"""The README's agent example as a user runs it: its code block saved as
``triage_agents.py`` in a fresh folder, ``wakeful worker --agents triage_agents:registry``
started from that folder in a shell, and ``wakeful trigger triage --message ...`` typed as
the README has it, printing the agent's answer. Only the servers differ: the session's
Postgres, Temporal and provider simulator (the README's offline setup), through the
environment, as a user's settings would point at theirs."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ops.cli_env import BIN, ROOT, cli_worker, shell
from wakeful.testing.simulator.server import SimulatorServer

README = ROOT / "README.md"


def commands() -> tuple[str, list[str]]:
    """The example's code block and the commands indented under "Then serve it"."""
    text = README.read_text(encoding="utf-8")
    start = text.index("Save this as `triage_agents.py`:")
    code = re.findall(r"```python\n(.*?)```", text[start:], flags=re.S)[0]
    after = text[text.index("Then serve it and wake it", start) :]
    lines = re.findall(r"^    (wakeful .*)$", after, flags=re.M)
    return code, lines[:2]


@pytest.fixture
def project(
    env: dict[str, str], sim: SimulatorServer, tmp_path: Path
) -> Iterator[tuple[Path, dict[str, str], list[str]]]:
    code, (serve, trigger) = commands()
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "triage_agents.py").write_text(code, encoding="utf-8")
    # No tenant setting, as in the README: the agent and the CLI both use the default one.
    drop = ("WAKEFUL_QDRANT_URL", "WAKEFUL_TENANT")
    env = {k: v for k, v in env.items() if k not in drop} | {
        "ANTHROPIC_BASE_URL": sim.base_url,  # the README's offline setup: no key needed
        "WAKEFUL_STATE_DIR": str(folder / ".wakeful"),
    }
    path = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    with cli_worker(
        ["bash", "-c", f"exec {serve}"],
        env,
        cwd=folder,
        start_within_s=120,
        process_env={"PATH": path},
        what="the README's worker",
    ):
        yield folder, env, [serve, trigger]


def test_the_readme_commands_serve_the_example_and_print_its_answer(
    project: tuple[Path, dict[str, str], list[str]],
) -> None:
    folder, env, (serve, trigger) = project
    assert serve == "wakeful worker --agents triage_agents:registry"
    assert trigger.startswith("wakeful trigger triage --message ")
    done = shell(trigger, env, cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    # The model called the typed tool and answered from its result (the simulator quotes
    # what it received): the answer, alone on stdout.
    assert done.stdout == (
        'Tool results received: {"failed_step":"migrate","service":"billing","status":"failed"}\n'
    ), done.stdout + done.stderr
    assert "done: 2 model call(s), 1 tool call(s)" in done.stderr
