"""A worker in its own process, so a test can kill it with SIGKILL mid-wake.

Usage: python worker_proc.py CONFIG_JSON
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.e2e.harness import restart_agent
from tests.e2e.worker_process import serve_from_argv

if __name__ == "__main__":
    serve_from_argv(lambda cfg: restart_agent(cfg.tenant, Path(cfg.workdir), cfg.markers))
