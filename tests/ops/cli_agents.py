"""Agent registries for CLI tests (tenant from the env).

``tests.ops.cli_agents:registry`` is ``clerk`` alone; ``:with_responses`` adds ``scribe``,
served through OpenAI's Responses API, and ``tally``, a second clerk (for a test that
breaks its agent's workflow while others wake ``clerk``); ``:with_gate`` adds
``gatekeeper``, whose tool waits for approval; ``:stock`` is all four, what the operations
tests' shared ``wakeful worker`` serves.
"""

from __future__ import annotations

import os

from wakeful.agents import Agent, AgentRegistry
from wakeful.demo.tools import DEMO_TOOLS


def _clerk(tenant: str, name: str = "clerk") -> Agent:
    return Agent(name=name, instructions="Answer briefly.", tools=DEMO_TOOLS, tenant=tenant)


def registry(tenant: str | None = None) -> AgentRegistry:
    return AgentRegistry([_clerk(tenant or os.environ["WAKEFUL_TENANT"])])


def with_responses(tenant: str | None = None) -> AgentRegistry:
    tenant = tenant or os.environ["WAKEFUL_TENANT"]
    scribe = Agent(
        name="scribe",
        instructions="Answer briefly.",
        provider="openai_responses",
        model="gpt-5",
        tenant=tenant,
    )
    return AgentRegistry([_clerk(tenant), scribe, _clerk(tenant, "tally")])


def with_gate(tenant: str | None = None) -> AgentRegistry:
    """``clerk`` and ``gatekeeper``, whose ``ship`` tool waits for a person's approval: a
    wake that calls it stays open (holding no worker) until someone decides."""
    from wakeful.typed_tools import tool

    @tool(requires_approval=True)
    def ship(service: str) -> str:
        """Ship a service to production.

        Args:
            service: The service's name.
        """
        return f"shipped {service}"

    tenant = tenant or os.environ["WAKEFUL_TENANT"]
    gate = Agent(name="gatekeeper", instructions="Ship when asked.", tools=(ship,), tenant=tenant)
    return AgentRegistry([_clerk(tenant), gate])


def stock(tenant: str | None = None) -> AgentRegistry:
    """Every agent of :func:`with_responses` and :func:`with_gate`, each once."""
    tenant = tenant or os.environ["WAKEFUL_TENANT"]
    gate = with_gate(tenant).get(tenant, "gatekeeper")
    return AgentRegistry([*with_responses(tenant), gate])
