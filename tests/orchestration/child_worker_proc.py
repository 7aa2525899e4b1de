"""A worker in its own process serving a parent agent, so a test can SIGKILL it while a
child agent's tool runs. Usage: python child_worker_proc.py CONFIG_JSON"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.orchestration.restart import parent_agent
from wakeful.activities.deps import ActivityDeps
from wakeful.agents import AgentRegistry
from wakeful.providers.registry import build_provider
from wakeful.substrate.store import Store
from wakeful.tokenizers import BpeCounter
from wakeful.worker.client import connect
from wakeful.worker.worker import build_worker


async def main(cfg: dict[str, str]) -> None:
    agent = parent_agent(cfg["tenant"], Path(cfg["workdir"]), Path(cfg["markers"]))
    provider = build_provider("anthropic", api_key=cfg["key"], base_url=cfg["sim"])
    deps = ActivityDeps(
        store=Store.connect(cfg["db"], migrate_schema=False),
        agents=AgentRegistry([agent]),
        providers=lambda name: provider,
        counter=BpeCounter(),
    )
    client = await connect(cfg["temporal"], cfg["namespace"])
    (Path(cfg["markers"]) / "worker-ready").touch()
    await build_worker(client, deps, cfg["queue"]).run()


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
