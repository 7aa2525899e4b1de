"""A team's own workflow and activity, unrelated to Wakeful, for the plugin test (a module
of its own: the sandbox imports a workflow's module afresh, so it stays light)."""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow


@activity.defn
async def shout(name: str) -> str:
    return f"HELLO, {name.upper()}"


@workflow.defn
class GreetWorkflow:
    @workflow.run
    async def run(self, name: str) -> str:
        greeting: str = await workflow.execute_activity(
            shout, name, start_to_close_timeout=timedelta(seconds=30)
        )
        return f"{greeting}!"
