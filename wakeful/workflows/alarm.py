"""A session timer that outlives the wakes between it being set and firing.

The agent waits for a trigger *or* its next session timer (keep-warm, idle end). Waiting
with a timeout starts a Temporal timer and cancels it when a trigger arrives first: two
history events per wake, spent on a deadline that the wake then moves anyway. An
:class:`Alarm` keeps one timer across wakes instead: it is re-armed only when the new
deadline comes *before* it, and when it rings early (the deadline moved later) the agent
finds nothing due and arms it again for the rest. A busy agent thus starts a timer once per
idle period, not once per wake.
"""

from __future__ import annotations

import asyncio
from datetime import datetime

from temporalio import workflow

__all__ = ["Alarm"]


class Alarm:
    def __init__(self) -> None:
        self._task: asyncio.Task[None] | None = None
        self._at: datetime | None = None

    def arm(self, due: datetime) -> None:
        """Make sure the alarm rings at or before ``due``."""
        task, at = self._task, self._at
        if task is not None and not task.done() and at is not None and at <= due:
            return
        if task is not None and not task.done():
            task.cancel()
        self._at = due
        delay = (due - workflow.now()).total_seconds()
        self._task = asyncio.create_task(asyncio.sleep(max(delay, 0.0)))

    def rang(self) -> bool:
        return self._task is not None and self._task.done()

    def clear(self) -> None:
        """Forget a rung alarm (the agent has looked at what was due)."""
        if self.rang():
            self._task, self._at = None, None
