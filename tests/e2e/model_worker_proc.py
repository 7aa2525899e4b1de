"""A worker in its own process serving one agent with no tools, so a test can kill it with
SIGKILL while a model call is in flight.

Usage: python model_worker_proc.py CONFIG_JSON
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.e2e.worker_process import serve_from_argv
from wakeful.agents import Agent


def model_agent(tenant: str) -> Agent:
    """The agent both workers serve: one model call per wake."""
    return Agent(name="model-restarter", instructions="You answer briefly.", tenant=tenant)


if __name__ == "__main__":
    serve_from_argv(lambda cfg: model_agent(cfg.tenant))
