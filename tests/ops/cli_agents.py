"""An agent registry for CLI tests: ``tests.ops.cli_agents:registry`` (tenant from the env)."""

from __future__ import annotations

import os

from wakeful.agents import Agent, AgentRegistry
from wakeful.demo.tools import DEMO_TOOLS


def registry(tenant: str | None = None) -> AgentRegistry:
    tenant = tenant or os.environ["WAKEFUL_TENANT"]
    return AgentRegistry(
        [Agent(name="clerk", instructions="Answer briefly.", tools=DEMO_TOOLS, tenant=tenant)]
    )
