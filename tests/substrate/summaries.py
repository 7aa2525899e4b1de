"""A consolidation's effect on the event log, as the substrate tests make it: a summary
that retires the span of events it stands for."""

from __future__ import annotations

from datetime import datetime

from wakeful.substrate.records import SummaryRecord
from wakeful.substrate.store import TenantStore


def retire_span(
    tenant: TenantStore,
    agent: str,
    span: tuple[int, int],
    text: str,
    *,
    at: datetime,
    step_key: str = "sum-1",
) -> SummaryRecord:
    """Add a level-1 summary ``text`` of the events ``span`` (first and last id) that
    retires them, dated ``at``."""
    first, last = span
    record = SummaryRecord(
        agent=agent, step_key=step_key, level=1, span_start=first, span_end=last, text=text
    )
    return tenant.add_summary(record, retire_span=True, at=at)
