"""A worker in its own process serving one agent whose tools are an MCP server's, so a test
can kill it with SIGKILL while an MCP call is in flight.

Usage: python mcp_worker_proc.py CONFIG_JSON
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.e2e.harness import make_deps
from wakeful.agents import Agent, AgentRegistry
from wakeful.mcp_tools import McpServer
from wakeful.substrate.store import Store
from wakeful.worker.client import connect
from wakeful.worker.worker import build_worker

HOLD = Path(__file__).with_name("mcp_hold_server.py")


class _Sim:
    def __init__(self, base_url: str) -> None:
        self.base_url = base_url


def mcp_agent(tenant: str, markers: str) -> Agent:
    """The agent both workers serve: one MCP server, whose tool may run for minutes."""
    hold = McpServer(
        name="hold",
        command=sys.executable,
        args=(str(HOLD),),
        env={"HOLD_MARKERS": markers},
        timeout_s=300,
    )
    return Agent(
        name="mcp-restarter",
        instructions="You use the tools you are given.",
        tenant=tenant,
        mcp_servers=(hold,),
    )


async def main(cfg: dict[str, str]) -> None:
    agent = mcp_agent(cfg["tenant"], cfg["markers"])
    store = Store.connect(cfg["db"], migrate_schema=False)
    deps = make_deps(store, AgentRegistry([agent]), _Sim(cfg["sim"]), cfg["key"])  # type: ignore[arg-type]
    client = await connect(cfg["temporal"], cfg["namespace"])
    (Path(cfg["markers"]) / "worker-ready").touch()
    await build_worker(client, deps, cfg["queue"]).run()


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
