"""The soak's agents, and a worker serving them in its own process so the soak can SIGKILL it.

Usage: python soak_worker.py CONFIG_JSON

Each agent has a tool run as a regular activity (``scan``, heartbeating so that a killed
worker's attempt is retried after seconds, not after its timeout), a local tool (``peek``,
``Tool(local=True)``) and a delegation whose child calls the local tool. Model calls are local
activities too: a model call that is a regular activity has no heartbeat, and one lost with
its worker would wait out its five-minute timeout before a retry.

The worker touches ``db-error-<n>`` in the markers directory whenever a statement or a
connect of its store fails, so a test can tell that the worker met a database outage.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pydantic import BaseModel
from sqlalchemy import event

from tests.e2e.harness import make_deps
from wakeful.agents import Agent, AgentRegistry, Delegation, Tool, ToolContext
from wakeful.demo.agent import INSTRUCTIONS
from wakeful.substrate.store import Store
from wakeful.worker.client import connect
from wakeful.worker.worker import build_worker

NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}}


class CheckReport(BaseModel):
    summary: str


def _scan(args: dict[str, Any], ctx: ToolContext) -> str:
    ctx.heartbeat()
    return "scan: 3 services healthy"


def _peek(args: dict[str, Any], ctx: ToolContext) -> str:
    return "peek: the queue holds 12 messages"


def soak_agent(tenant: str, name: str, workdir: Path) -> Agent:
    return Agent(
        name=name,
        instructions=INSTRUCTIONS,
        tools=(
            Tool("scan", "Scan the fleet.", NO_ARGS, _scan, timeout_s=30, heartbeat_s=2),
            Tool("peek", "Peek at the queue.", NO_ARGS, _peek, timeout_s=5, local=True),
        ),
        workdir=str(workdir),
        tenant=tenant,
        local_model_calls=True,
        delegations=(
            Delegation(
                name="check",
                description="Check the queue and report.",
                output=CheckReport,
                tools=("peek",),
                max_model_calls=3,
                timeout_s=600,
                max_attempts=1,
                on_invalid="report",
            ),
        ),
    )


def soak_agents(tenant: str, names: list[str], workdir: Path) -> list[Agent]:
    return [soak_agent(tenant, name, workdir / name) for name in names]


class _Sim:
    def __init__(self, base_url: str) -> None:
        self.base_url = base_url


def _report_db_errors(store: Store, markers: Path) -> None:
    counter = itertools.count()

    def failed(context: object) -> None:
        (markers / f"db-error-{os.getpid()}-{next(counter)}").touch()

    event.listen(store.engine, "handle_error", failed)


async def main(cfg: dict[str, Any]) -> None:
    markers = Path(cfg["markers"])
    agents = soak_agents(cfg["tenant"], cfg["agents"], Path(cfg["workdir"]))
    store = Store.connect(cfg["db"], migrate_schema=False)
    _report_db_errors(store, markers)
    deps = make_deps(store, AgentRegistry(agents), _Sim(cfg["sim"]), cfg["key"])  # type: ignore[arg-type]
    client = await connect(cfg["temporal"], cfg["namespace"])
    worker = build_worker(client, deps, cfg["queue"])
    (markers / f"worker-ready-{os.getpid()}").touch()
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
