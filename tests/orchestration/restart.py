"""The parent agent of the child-restart test: one delegation whose only tool is slow."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from tests.e2e.harness import slow_tool
from wakeful.agents import Agent, Delegation
from wakeful.demo.agent import INSTRUCTIONS


class ScanReport(BaseModel):
    summary: str


def parent_agent(tenant: str, workdir: Path, markers: Path) -> Agent:
    return Agent(
        name="lead",
        instructions=INSTRUCTIONS,
        tools=(slow_tool(markers),),
        workdir=str(workdir),
        tenant=tenant,
        delegations=(
            Delegation(
                name="scan",
                description="Scan the fleet and report.",
                output=ScanReport,
                tools=("slow_scan",),
                timeout_s=180,
            ),
        ),
    )
