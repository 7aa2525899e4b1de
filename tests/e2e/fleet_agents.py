"""The agent of the fleet test's ``wakeful worker`` processes: the demo's scout in the
tenant ``WAKEFUL_TENANT`` names, working in the directory ``FLEET_WORKSPACE`` names.

``wakeful worker --agents tests.e2e.fleet_agents:registry``
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.e2e.harness import demo_scout
from wakeful.agents import AgentRegistry


def registry() -> AgentRegistry:
    workspace = Path(os.environ["FLEET_WORKSPACE"])
    return AgentRegistry([demo_scout(workspace, os.environ["WAKEFUL_TENANT"])])
