"""Turns, tool calls and tool results as the tests append them to the event log."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from wakeful.substrate.records import EventIn

# Who speaks each half of a tool use: the model calls, the result comes back as the user's.
_ROLE: dict[str, Literal["user", "assistant"]] = {"tool_call": "assistant", "tool_result": "user"}


def tool_event(
    kind: Literal["tool_call", "tool_result"],
    step_key: str,
    text: str,
    *,
    call_id: str,
    tool: str,
    at: datetime,
    **fields: Any,
) -> EventIn:
    """The ``tool_call`` (the assistant's; ``text`` its input as written) or the
    ``tool_result`` (user-role) event of the call ``call_id`` of ``tool``, with any further
    EventIn ``fields`` (session, wake, tool_input, ...; ``role`` overrides the usual one)."""
    given: dict[str, Any] = {
        "step_key": step_key,
        "kind": kind,
        "role": _ROLE[kind],
        "text": text,
        "tool_call_id": call_id,
        "tool_name": tool,
        "event_time": at,
    }
    return EventIn(**(given | fields))


def turn_event(
    step_key: str,
    text: str,
    *,
    at: datetime,
    role: Literal["user", "assistant"] = "user",
    **fields: Any,
) -> EventIn:
    """A turn ``text`` said by ``role``, with any further EventIn ``fields``."""
    return EventIn(step_key=step_key, kind="turn", role=role, text=text, event_time=at, **fields)
