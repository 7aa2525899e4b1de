"""A worker in its own process, so a test can kill it with SIGKILL mid-wake.

Usage: python worker_proc.py CONFIG_JSON
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.e2e.harness import make_deps, restart_agent
from wakeful.agents import AgentRegistry
from wakeful.substrate.store import Store
from wakeful.worker.client import connect
from wakeful.worker.worker import build_worker


class _Sim:
    def __init__(self, base_url: str) -> None:
        self.base_url = base_url


async def main(cfg: dict[str, str]) -> None:
    agent = restart_agent(cfg["tenant"], Path(cfg["workdir"]), Path(cfg["markers"]))
    store = Store.connect(cfg["db"], migrate_schema=False)
    deps = make_deps(store, AgentRegistry([agent]), _Sim(cfg["sim"]), cfg["key"])  # type: ignore[arg-type]
    client = await connect(cfg["temporal"], cfg["namespace"])
    (Path(cfg["markers"]) / "worker-ready").touch()
    await build_worker(client, deps, cfg["queue"]).run()


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
