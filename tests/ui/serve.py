"""`wakeful ui` run as a user runs it: a child process on a free local port."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from wakeful.worker.ports import find_free_port

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Served:
    base: str  # http://127.0.0.1:<port>
    said: str = field(default="")  # its stderr, once it stopped
    returncode: int | None = None


@contextmanager
def serving_ui(env: dict[str, str], *args: str) -> Iterator[Served]:
    """Serve until the block ends, then stop it as a service manager does (SIGTERM)."""
    port = find_free_port(range(47300, 47400))
    assert port is not None
    server = subprocess.Popen(
        [sys.executable, "-m", "wakeful.cli.main", "ui", "--port", str(port), *args],
        env=env,
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    served = Served(f"http://127.0.0.1:{port}")
    try:
        while True:  # bounded by the test timeout; the server says why if it dies
            assert server.poll() is None, server.stderr.read() if server.stderr else ""
            try:
                httpx.get(f"{served.base}/")
                break
            except httpx.TransportError:
                time.sleep(0.1)
        yield served
    finally:
        server.send_signal(signal.SIGTERM)
        _, served.said = server.communicate(timeout=60)
        served.returncode = server.returncode
