"""A worker in its own process serving a parent agent, so a test can SIGKILL it while a
child agent's tool runs. Usage: python child_worker_proc.py CONFIG_JSON"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.e2e.worker_process import serve_from_argv
from tests.orchestration.restart import parent_agent

if __name__ == "__main__":
    serve_from_argv(lambda cfg: parent_agent(cfg.tenant, Path(cfg.workdir), cfg.markers))
