"""A worker in its own process serving one agent with no tools, so a test can kill it with
SIGKILL while a model call is in flight.

Usage: python model_worker_proc.py CONFIG_JSON [--fallback]
(``--fallback``: the agent has :data:`FALLBACK` as its fallback.)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.e2e.worker_process import serve_from_argv
from wakeful.agents import Agent

FALLBACK = ("openai_chat", "gpt-4.1-mini")


def model_agent(tenant: str, *, fallback: bool = False) -> Agent:
    """The agent both workers serve: one model call per wake (with ``fallback``, which may
    fail over to :data:`FALLBACK`)."""
    return Agent(
        name="model-restarter",
        instructions="You answer briefly.",
        tenant=tenant,
        fallbacks=(FALLBACK,) if fallback else (),
    )


if __name__ == "__main__":
    fallback = sys.argv[2:] == ["--fallback"]
    serve_from_argv(lambda cfg: model_agent(cfg.tenant, fallback=fallback))
