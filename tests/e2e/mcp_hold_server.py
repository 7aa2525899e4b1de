"""A FastMCP server whose one tool holds until the test releases it, run over stdio.

``hold`` writes ``started-<pid>-<ppid>-<n>`` into ``$HOLD_MARKERS`` as it starts (so a test
knows the call is in flight, and which server process, started by which worker, runs it)
and then waits for ``$HOLD_MARKERS/release``. The marker files are the synchronisation;
the wait's deadline only stops a forgotten server.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio
from mcp.server.fastmcp import FastMCP

server = FastMCP("hold")
MARKERS = Path(os.environ.get("HOLD_MARKERS", "."))


@server.tool()
async def hold(label: str) -> str:
    """Hold until released, then say so."""
    (MARKERS / f"started-{os.getpid()}-{os.getppid()}-{time.monotonic_ns()}").touch()
    deadline = time.monotonic() + 120
    while not (MARKERS / "release").exists():
        if time.monotonic() > deadline:
            raise TimeoutError("never released")
        await anyio.sleep(0.05)
    return f"released {label}"


if __name__ == "__main__":
    server.run()
