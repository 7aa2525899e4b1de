"""The README's agent example as a user runs it: its code block saved as
``triage_agents.py`` in a fresh folder, ``wakeful worker --agents triage_agents:registry``
started from that folder in a shell, and ``wakeful trigger triage --message ...`` typed as
the README has it, printing the agent's answer. Only the servers differ: the session's
Postgres, Temporal and provider simulator (the README's offline setup), through the
environment, as a user's settings would point at theirs."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.ops.cli_env import BIN, ROOT, cli_worker, shell
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.settings import Settings

README = ROOT / "README.md"


def stream_command() -> str:
    """The command of the README's "Streaming a wake" section."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### Streaming a wake") :]
    return re.findall(r"^    (wakeful .*)$", section, flags=re.M)[0]


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
    project: tuple[Path, dict[str, str], list[str]], sim: SimulatorServer
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
    # On the same worker (one start for all): the README's streaming command, then its
    # per-user wakes (the third and fourth).
    streams_while_the_wake_runs(folder, env, sim)
    keeps_each_users_memory_to_that_user(folder, env)


def per_user_commands() -> list[str]:
    """The commands of the README's "Per-user memory" section."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### Per-user memory") :]
    section = section[: section.index("\n### ", 1)]
    return re.findall(r"^    (wakeful .*)$", section, flags=re.M)


def keeps_each_users_memory_to_that_user(folder: Path, env: dict[str, str]) -> None:
    """The README's per-user commands: alice's wake, bob's in the same session, and the
    ledger of bob's wake, which names its scope; nothing alice said reaches his window."""
    alice, bob, explain = per_user_commands()
    assert alice.startswith("wakeful trigger triage --user alice --message ")
    assert bob.startswith("wakeful trigger triage --user bob --message ")
    assert explain == "wakeful explain triage --wake 4"
    outputs = []
    for command in (alice, bob, explain):
        done = shell(command, env, cwd=folder)
        assert done.returncode == 0, (command, done.stdout, done.stderr)
        outputs.append(done.stdout)
    assert "decision memory.scope: user bob" in outputs[2], outputs[2]
    store = Store.connect(env["WAKEFUL_DATABASE_URL"])
    try:
        ts = store.tenant(str(Settings.model_fields["tenant"].default))
        wakes = {w.number: w for w in ts.wakes("triage")}
        assert wakes[3].session_id == wakes[4].session_id  # one session, two users
        assert {e.user_id for e in ts.events("triage", wake_id=wakes[3].wake_id)} == {"alice"}
        bob_saw = "".join(ts.get_blob(c.window_hash) for c in ts.compiles(wakes[4].wake_id))
        assert "release train" in bob_saw and "Thursdays" not in bob_saw
    finally:
        store.close()


def streams_while_the_wake_runs(folder: Path, env: dict[str, str], sim: SimulatorServer) -> None:
    """``wakeful trigger --stream`` as the README has it prints the reply's first piece
    while the wake still runs, then each call's text on its line, the answer once."""
    command = stream_command()
    assert command.startswith("wakeful trigger triage --stream --message ")
    store = Store.connect(env["WAKEFUL_DATABASE_URL"])
    ts = store.tenant(str(Settings.model_fields["tenant"].default))
    # The simulator holds each stream after its first piece until released: what the
    # command prints before then was streamed while the wake ran.
    sim.simulator.pace.hold()
    proc = subprocess.Popen(
        ["bash", "-c", command],
        env=os.environ | env | {"PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"},
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=0,  # unbuffered: reading the first byte leaves the rest in the pipe
    )
    try:
        assert proc.stdout is not None
        with ThreadPoolExecutor(1) as pool:
            first = pool.submit(proc.stdout.read, 1).result(timeout=120)
        assert first == b"C", "no streamed text"  # "Calling deploy_status." begins so
        assert [w for w in ts.wakes("triage") if w.status == "running"], "the wake ended"
    finally:
        sim.simulator.pace.release()
    out, err = proc.communicate(timeout=120)
    store.close()
    stdout, stderr = (first + out).decode(), err.decode()
    assert proc.returncode == 0, stdout + stderr
    # Each model call's text on its line, the tool call on stderr, the answer last, once.
    assert stdout == (
        "Calling deploy_status.\n"
        'Tool results received: {"failed_step":"migrate","service":"billing","status":"failed"}\n'
    ), stdout + stderr
    assert 'calling deploy_status {"service": "billing"}' in stderr
    assert "done: 2 model call(s), 1 tool call(s)" in stderr
