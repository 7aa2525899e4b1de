"""A workflow that, like an agent's after a wake, asks for a pressure-gated consolidation.

In its own module: the workflow sandbox re-imports the module a workflow is defined in.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from wakeful.consolidation.contracts import ConsolidationInput
    from wakeful.workflows.consolidation import consolidate_on_pressure


@workflow.defn(name="AfterWake")
class AfterWake:
    @workflow.run
    async def run(self, inp: ConsolidationInput) -> bool:
        return await consolidate_on_pressure(inp)
