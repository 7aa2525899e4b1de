"""`wakeful ui` run as a user runs it: a child process on a free local port."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Served:
    base: str  # http://127.0.0.1:<port>
    said: str = field(default="")  # its stderr, once it stopped
    returncode: int | None = None


@contextmanager
def serving_ui(env: dict[str, str], *args: str) -> Iterator[Served]:
    """Serve until the block ends, then stop it as a service manager does (SIGTERM).

    It binds any free port (``--port 0``) and the test reads the address it prints: a port
    chosen here and bound there could be taken in between by a test running beside it."""
    server = subprocess.Popen(
        [sys.executable, "-m", "wakeful.cli.main", "ui", "--port", "0", *args],
        env=env,
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert server.stderr is not None
    said: list[str] = []
    served = Served("")
    try:
        for line in server.stderr:  # bounded by the test timeout; ends if the server dies
            said.append(line)
            if m := re.match(r"wakeful ui on http://\S+?:(\d+)/", line):
                served.base = f"http://127.0.0.1:{m[1]}"
                break
        assert served.base, "".join(said)
        yield served
    finally:
        server.send_signal(signal.SIGTERM)
        _, rest = server.communicate(timeout=60)
        served.said = "".join(said) + rest
        served.returncode = server.returncode
