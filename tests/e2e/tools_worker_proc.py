"""A worker in its own process serving one agent with the demo's file tools, so a test can
kill it with SIGKILL while a tool is stuck.

Usage: python tools_worker_proc.py CONFIG_JSON
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.e2e.harness import make_deps
from wakeful.agents import Agent, AgentRegistry
from wakeful.demo.agent import INSTRUCTIONS
from wakeful.demo.tools import DEMO_TOOLS
from wakeful.substrate.store import Store
from wakeful.worker.client import connect
from wakeful.worker.worker import build_worker


class _Sim:
    def __init__(self, base_url: str) -> None:
        self.base_url = base_url


def tools_agent(tenant: str, workdir: str) -> Agent:
    return Agent(
        name="scout", instructions=INSTRUCTIONS, tools=DEMO_TOOLS, workdir=workdir, tenant=tenant
    )


async def main(cfg: dict[str, str]) -> None:
    agent = tools_agent(cfg["tenant"], cfg["workdir"])
    store = Store.connect(cfg["db"], migrate_schema=False)
    deps = make_deps(store, AgentRegistry([agent]), _Sim(cfg["sim"]), cfg["key"])  # type: ignore[arg-type]
    client = await connect(cfg["temporal"], cfg["namespace"])
    (Path(cfg["markers"]) / "worker-ready").touch()
    await build_worker(client, deps, cfg["queue"]).run()


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
