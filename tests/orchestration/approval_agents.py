"""An agent whose ``deploy`` tool needs a person's approval, and a script that calls it."""

from __future__ import annotations

import uuid
from typing import Literal

from wakeful.agents import Agent
from wakeful.demo.agent import INSTRUCTIONS
from wakeful.substrate.store import Store
from wakeful.testing.simulator.script import Script
from wakeful.typed_tools import tool
from wakeful.worker.serve import register_agent

WAKE = [
    {
        "text": "Deploying.",
        "tool_calls": [{"name": "deploy", "input": {"service": "billing", "version": "v42"}}],
    },
    {"text": "Done: billing is handled."},
]
SCRIPT = Script.parse(WAKE)
TWO_WAKES = Script.parse(WAKE + WAKE)


class Deploys:
    """The ``deploy`` tool; ``runs`` holds every call it actually ran."""

    def __init__(self) -> None:
        self.runs: list[str] = []

    def agent(
        self,
        store: Store,
        *,
        timeout_s: float | None = None,
        on_timeout: Literal["deny", "park"] = "deny",
    ) -> Agent:
        @tool(requires_approval=True, approval_timeout_s=timeout_s, on_approval_timeout=on_timeout)
        def deploy(service: str, version: str) -> str:
            """Deploy a version of a service to production.

            Args:
                service: The service's name.
                version: The version to deploy.
            """
            self.runs.append(f"{service}@{version}")
            return f"deployed {service} {version}"

        agent = Agent(
            name="deployer",
            instructions=INSTRUCTIONS,
            tools=(deploy,),
            tenant=f"appr-{uuid.uuid4().hex[:10]}",
        )
        register_agent(store.tenant(agent.tenant), agent)
        return agent
