"""``ScheduledWakeWorkflow``: what a Temporal Schedule starts on every fire.

A Schedule cannot send a signal, only start a workflow; this tiny workflow turns one fire into
one trigger and delivers it to the agent's workflow with signal-with-start (through the
``deliver_trigger`` activity, since a workflow cannot signal-with-start itself). The
trigger's idempotency key is derived from the fire's *scheduled* time (Temporal sets the
``TemporalScheduledStartTime`` search attribute on every workflow a Schedule starts), not from
when it ran, so a catch-up re-fire, a backfill over the same range or a retried delivery
all carry the same key and the agent wakes once per scheduled time.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel, Field
from temporalio import workflow
from temporalio.common import SearchAttributeKey

with workflow.unsafe.imports_passed_through():
    from wakeful.agents import AgentRuntime
    from wakeful.compiler.blocks import Goal, GoalKind
    from wakeful.contracts import DELIVER_TRIGGER, DeliverTriggerIn, DeliverTriggerOut, Trigger
    from wakeful.workflows import retries as p
    from wakeful.workflows.cycle import act

__all__ = ["SCHEDULED_START", "ScheduledWakeInput", "ScheduledWakeWorkflow", "schedule_key"]

SCHEDULED_START = SearchAttributeKey.for_datetime("TemporalScheduledStartTime")


class ScheduledWakeInput(BaseModel):
    runtime: AgentRuntime
    schedule_id: str
    message: str
    task_queue: str
    every: timedelta | None = Field(None, description="The interval, when the spec has one.")
    new_session: bool = False
    scheduled_at: datetime | None = Field(
        None, description="Only for runs not started by a Schedule (which supplies its own)."
    )
    # Each wake's goal's, for the compile policy's triggers (checked by wakeful.routing when
    # the schedule is made). Schedules made before them start runs without them: none.
    intents: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    task_class: str | None = None


def schedule_key(schedule_id: str, at: datetime) -> str:
    return f"schedule:{schedule_id}:{at.isoformat()}"


@workflow.defn(name="ScheduledWakeWorkflow")
class ScheduledWakeWorkflow:
    @workflow.run
    async def run(self, inp: ScheduledWakeInput) -> str:
        info = workflow.info()
        at = info.typed_search_attributes.get(SCHEDULED_START) or inp.scheduled_at
        at = at or info.start_time
        key = schedule_key(inp.schedule_id, at)
        trigger = Trigger(
            goal=Goal(
                kind=GoalKind.SCHEDULE,
                text=f"Scheduled wake ({inp.schedule_id}, {at.isoformat()}): {inp.message}",
                idempotency_key=key,
                intents=inp.intents,
                paths=inp.paths,
                task_class=inp.task_class,
            ),
            idempotency_key=key,
            new_session=inp.new_session,
            received_at=at,
            next_expected_at=at + inp.every if inp.every else None,
        )
        await act(
            DELIVER_TRIGGER,
            DeliverTriggerIn(runtime=inp.runtime, trigger=trigger, task_queue=inp.task_queue),
            DeliverTriggerOut,
            start_to_close=p.DELIVER_TIMEOUT,
            retry=p.DELIVER_RETRY,
        )
        return key
