"""A worker in its own process serving one agent with the demo's file tools, so a test can
kill it with SIGKILL while a tool is stuck.

Usage: python tools_worker_proc.py CONFIG_JSON
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.e2e.harness import demo_scout
from tests.e2e.worker_process import serve_from_argv

if __name__ == "__main__":
    serve_from_argv(lambda cfg: demo_scout(Path(cfg.workdir), cfg.tenant))
