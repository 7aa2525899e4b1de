"""Small builders for consolidation tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from wakeful.consolidation.items import SpanItem

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def turn(
    i: int, text: str, role: str = "user", *, minutes: int | None = None, **kw: object
) -> SpanItem:
    at = T0 + timedelta(minutes=i if minutes is None else minutes)
    return SpanItem(id=i, kind="turn", text=text, at=at, role=role, **kw)  # type: ignore[arg-type]


def tool_pair(i: int, call_id: str, output: str, **kw: object) -> list[SpanItem]:
    at = T0 + timedelta(minutes=i)
    return [
        SpanItem(
            id=i,
            kind="tool_call",
            text="{}",
            at=at,
            role="assistant",
            tool_call_id=call_id,
            tool_name="query_logs",
            **kw,
        ),  # type: ignore[arg-type]
        SpanItem(
            id=i + 1,
            kind="tool_result",
            text=output,
            at=at,
            role="user",
            tool_call_id=call_id,
            tool_name="query_logs",
            **kw,
        ),  # type: ignore[arg-type]
    ]
