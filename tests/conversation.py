"""Conversations to seed a store with: one session's turns, the user's and the assistant's
in turn, as the consolidation, retrieval and decision tests start from."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from wakeful.substrate.records import EventIn


def conversation(
    texts: Iterable[str],
    *,
    session_id: str,
    start: datetime,
    step_key: str,
    apart: timedelta = timedelta(minutes=1),
) -> list[EventIn]:
    """``texts`` as the turns of ``session_id``, the user's first and then by turns: the n-th
    at ``start + n * apart``, its step key ``f"{step_key}{n}"``."""
    return [
        EventIn(
            step_key=f"{step_key}{n}",
            kind="turn",
            role="user" if n % 2 == 0 else "assistant",
            text=text,
            session_id=session_id,
            event_time=start + n * apart,
        )
        for n, text in enumerate(texts)
    ]
