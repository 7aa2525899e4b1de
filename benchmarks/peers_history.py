"""A system's Temporal footprint, read from the server: ``wakeful bench peers``.

Every run of every workflow on the system's task queue counts: its conversation
workflow's runs (a continue-as-new chain, followed back from the latest run through each
run's first event, so none is missed while visibility catches up) and any other workflow
it started there (found through visibility). Bytes are the events' protobuf sizes, what
Temporal's history limits count.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import Message
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client

__all__ = ["Footprint", "footprint", "payload_sizes"]

_PAYLOAD = "temporal.api.common.v1.Payload"


@dataclass(frozen=True)
class Footprint:
    bytes: int
    events: int
    runs: int
    largest_payload_bytes: int
    largest_payload_event: str


def payload_sizes(message: Message) -> Iterator[int]:
    """The serialized size of every Payload anywhere inside ``message``."""
    if message.DESCRIPTOR.full_name == _PAYLOAD:
        yield message.ByteSize()
        return
    for _field, value in message.ListFields():
        if isinstance(value, Message):
            yield from payload_sizes(value)
            continue
        items: Any = value.values() if hasattr(value, "values") else value
        if isinstance(items, str | bytes):
            continue
        try:
            iterator = iter(items)
        except TypeError:
            continue
        for item in iterator:
            if isinstance(item, Message):
                yield from payload_sizes(item)


class _Tally:
    def __init__(self) -> None:
        self.bytes = self.events = self.runs = self.largest = 0
        self.where = ""
        self.seen: set[str] = set()

    def add(self, events: Iterable[HistoryEvent]) -> str:
        """Count one run's events; returns the run it continued from ("" if none)."""
        previous = ""
        self.runs += 1
        for event in events:
            if event.HasField("workflow_execution_started_event_attributes"):
                started = event.workflow_execution_started_event_attributes
                self.seen.add(started.original_execution_run_id)
                previous = started.continued_execution_run_id
            self.bytes += event.ByteSize()
            self.events += 1
            for size in payload_sizes(event):
                if size > self.largest:
                    self.largest = size
                    kind = event.WhichOneof("attributes") or ""
                    self.where = kind.removesuffix("_event_attributes")
        return previous


async def footprint(client: Client, queue: str, workflow_id: str) -> Footprint:
    tally = _Tally()
    # The conversation's continue-as-new chain, from its latest run back.
    run_id: str | None = None
    while True:
        history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
        run_id = tally.add(history.events) or None
        if run_id is None:
            break
    # Any other workflow the system started on its queue.
    async for wf in client.list_workflows(f'TaskQueue = "{queue}"'):
        if wf.run_id not in tally.seen:
            history = await client.get_workflow_handle(wf.id, run_id=wf.run_id).fetch_history()
            tally.add(history.events)
    return Footprint(tally.bytes, tally.events, tally.runs, tally.largest, tally.where)
