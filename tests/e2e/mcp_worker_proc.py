"""A worker in its own process serving one agent whose tools are an MCP server's, so a test
can kill it with SIGKILL while an MCP call is in flight.

Usage: python mcp_worker_proc.py CONFIG_JSON
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.e2e.worker_process import serve_from_argv
from wakeful.agents import Agent
from wakeful.mcp_tools import McpServer

HOLD = Path(__file__).with_name("mcp_hold_server.py")


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


if __name__ == "__main__":
    serve_from_argv(lambda cfg: mcp_agent(cfg.tenant, str(cfg.markers)))
