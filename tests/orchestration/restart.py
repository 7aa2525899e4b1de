"""The parent agent of the child-restart test: one delegation whose only tool is slow."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from tests.e2e.harness import restart_agent
from wakeful.agents import Agent, Delegation


class ScanReport(BaseModel):
    summary: str


SCAN = Delegation(
    name="scan",
    description="Scan the fleet and report.",
    output=ScanReport,
    tools=("slow_scan",),
    timeout_s=180,
)


def parent_agent(tenant: str, workdir: Path, markers: Path) -> Agent:
    """:func:`restart_agent` named ``lead``, which may hand the slow scan to a child."""
    return restart_agent(tenant, workdir, markers, name="lead", delegations=(SCAN,))
