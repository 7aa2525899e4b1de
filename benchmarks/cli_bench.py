"""``wakeful bench cli``: how fast the command line starts.

Runs ``wakeful --help`` as a child process, as a shell does (the console script installed
beside this interpreter, else ``python -m wakeful.cli.main``), ``runs`` times, and a fresh
interpreter that imports ``wakeful.cli.main`` as many times. Reported:

* ``help_wall_ms_p50`` / ``help_wall_ms_min`` — wall time of ``wakeful --help``, from
  starting the process to its exit (interpreter start-up included);
* ``help_cpu_ms_p50`` — the child's CPU time (user + system): on a machine whose cores are
  shared, wall time is partly waiting for a core, CPU time is what the command costs;
* ``import_ms_p50`` — the time ``import wakeful.cli.main`` takes inside a fresh interpreter;
* ``heavy_loaded`` — which of :data:`HEAVY_PACKAGES` that import loaded (none is the aim:
  commands import them when they run).

Progress goes to stderr; ``run`` returns the JSON object.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from wakeful.errors import RuntimeFailure, UserError

# Top-level packages that take seconds to import and that no help text needs.
HEAVY_PACKAGES = (
    "anthropic",
    "fastapi",
    "httpx",
    "mcp",
    "numpy",
    "openai",
    "psycopg",
    "qdrant_client",
    "qdrant_edge",
    "sqlalchemy",
    "temporalio",
    "uvicorn",
)

_IMPORT_PROBE = """
import json, sys, time
start = time.perf_counter()
import wakeful.cli.main
took = time.perf_counter() - start
heavy = json.loads(sys.argv[1])
print(json.dumps({"ms": took * 1000, "heavy": sorted(h for h in heavy if h in sys.modules)}))
"""


def wakeful_command() -> list[str]:
    """``wakeful`` as a user's shell runs it: the console script beside this interpreter."""
    script = Path(sys.executable).parent / "wakeful"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "wakeful.cli.main"]


def _timed(args: list[str]) -> tuple[float, float, str]:
    """Run ``args`` to completion: its wall ms, its CPU ms (user + system) and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeFailure(
            f"`{' '.join(args)}` exited {done.returncode}: {done.stderr.strip()[-300:]}"
        )
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall * 1000, cpu * 1000, done.stdout


def run(runs: int = 10, log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Time ``wakeful --help`` and the import of the command line, ``runs`` times each."""
    say = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    if runs < 1:
        raise UserError(f"--runs {runs} must be at least 1")
    command = [*wakeful_command(), "--help"]
    say(f"running `{' '.join(command)}` and a fresh `import wakeful.cli.main` {runs} times each")
    walls, cpus, imports = [], [], []
    heavy: list[str] = []
    for _ in range(runs):
        wall, cpu, _out = _timed(command)
        walls.append(wall)
        cpus.append(cpu)
        _w, _c, out = _timed([sys.executable, "-c", _IMPORT_PROBE, json.dumps(HEAVY_PACKAGES)])
        probe = json.loads(out)
        imports.append(float(probe["ms"]))
        heavy = probe["heavy"]
    return {
        "command": "wakeful --help",
        "runs": runs,
        "help_wall_ms_p50": round(statistics.median(walls), 1),
        "help_wall_ms_min": round(min(walls), 1),
        "help_cpu_ms_p50": round(statistics.median(cpus), 1),
        "import_ms_p50": round(statistics.median(imports), 1),
        "heavy_loaded": heavy,
        "cpus": os.cpu_count(),
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }
