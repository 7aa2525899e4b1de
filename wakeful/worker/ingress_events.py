"""The webhook event format, its JSON schema, and how a delivery becomes a trigger.

A delivery's body is one JSON object (``EVENT_SCHEMA``)::

    {"id": "evt_123", "type": "deploy.failed", "text": "deploy 812 failed", "payload": {...}}

* ``id`` — the sender's event id: the idempotency key (or send an ``Idempotency-Key``
  header; when both are sent they must agree). One key wakes the agent at most once.
* ``type`` — what happened, e.g. ``deploy.failed``.
* ``text`` and/or ``payload`` — what the agent reads: a message, a JSON object, or both.
* ``new_session`` — start a fresh session instead of continuing the current one.

Unknown fields are refused (a typo such as ``txt`` would otherwise be silently lost). The
body becomes a ``webhook`` goal, redacted like tool output (it comes from the world), which
the compiler frames as data inside ``<wake kind="webhook">``.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from wakeful.compiler.blocks import Goal, GoalKind
from wakeful.contracts import Trigger
from wakeful.redaction import RedactionPolicy

__all__ = [
    "EVENT_SCHEMA",
    "IDEMPOTENCY_HEADER",
    "EventError",
    "WebhookEvent",
    "goal_text",
    "idempotency_key",
    "parse_event",
    "to_trigger",
]

IDEMPOTENCY_HEADER = "Idempotency-Key"
MAX_DEPTH = 32
_KEY_PATTERN = r"^[\x21-\x7e]{1,200}$"  # visible ASCII, no spaces
_TYPE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,99}$"

EVENT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://wakeful.dev/schemas/webhook-event.json",
    "title": "Wakeful webhook event",
    "type": "object",
    "additionalProperties": False,
    "required": ["type"],
    "anyOf": [{"required": ["text"]}, {"required": ["payload"]}],
    "properties": {
        "id": {
            "type": "string",
            "pattern": _KEY_PATTERN,
            "description": "The sender's event id, used as the idempotency key unless an "
            "Idempotency-Key header is sent.",
        },
        "type": {
            "type": "string",
            "pattern": _TYPE_PATTERN,
            "description": "What happened, e.g. deploy.failed.",
        },
        "text": {"type": "string", "description": "A message for the agent."},
        "payload": {"type": "object", "description": "Structured event data for the agent."},
        "new_session": {
            "type": "boolean",
            "description": "Start a fresh session (default: continue the current one).",
        },
    },
}


class EventError(Exception):
    """A body that is not a valid event; ``code`` is ``bad_json`` or ``invalid_event``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class WebhookEvent(BaseModel):
    """The validated body. Mirrors ``EVENT_SCHEMA`` (a test checks that they agree)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    id: str | None = Field(default=None, pattern=_KEY_PATTERN)
    type: str = Field(pattern=_TYPE_PATTERN)
    text: str | None = None
    payload: dict[str, Any] | None = None
    new_session: bool = False

    @model_validator(mode="before")
    @classmethod
    def _no_nulls(cls, data: Any) -> Any:
        # The schema has no nulls: a field is present with its type, or absent.
        if isinstance(data, dict):
            nulls = sorted(str(k) for k, v in data.items() if v is None)
            if nulls:
                raise ValueError(f"{', '.join(nulls)} must not be null (leave the field out)")
        return data

    @model_validator(mode="after")
    def _has_content(self) -> WebhookEvent:
        if self.text is None and self.payload is None:
            raise ValueError("an event needs 'text', 'payload' or both")
        return self


def parse_event(body: bytes) -> WebhookEvent:
    """Parse and validate a body, or raise :class:`EventError` naming what is wrong."""
    try:
        decoded = json.loads(body, parse_constant=_no_constants)
    except (UnicodeDecodeError, json.JSONDecodeError, ValueError) as err:
        raise EventError(
            "bad_json", f"body is not valid UTF-8 JSON ({_json_reason(err)}); send one JSON object"
        ) from None
    except RecursionError:
        raise EventError("bad_json", f"body nests deeper than {MAX_DEPTH} levels") from None
    if not isinstance(decoded, dict):
        raise EventError("invalid_event", f"body must be a JSON object, not {_json_type(decoded)}")
    if _depth(decoded) > MAX_DEPTH:
        raise EventError("invalid_event", f"body nests deeper than {MAX_DEPTH} levels")
    try:
        return WebhookEvent.model_validate(decoded)
    except ValidationError as err:
        raise EventError("invalid_event", "invalid event: " + _describe(err)) from None


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _depth(value: Any) -> int:
    """Nesting depth, iteratively: a hostile body must not exhaust the stack later."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            if level > MAX_DEPTH:
                return level
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, level + 1) for child in children)
    return deepest


def _json_type(value: Any) -> str:
    names = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def _json_reason(err: Exception) -> str:
    if isinstance(err, json.JSONDecodeError):
        return f"{err.msg} at line {err.lineno} column {err.colno}"
    if isinstance(err, UnicodeDecodeError):
        return "not UTF-8"
    return str(err)


def _describe(err: ValidationError) -> str:
    problems = []
    for item in err.errors(include_url=False, include_input=False)[:5]:
        where = ".".join(str(p) for p in item["loc"]) or "body"
        msg = str(item["msg"]).removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            msg = "unknown field (allowed: id, type, text, payload, new_session)"
        elif item["type"] == "string_pattern_mismatch":
            msg = (
                "must be 1-200 visible ASCII characters"
                if where == "id"
                else "must start with a letter or digit and use only A-Z a-z 0-9 _ . : / -"
                " (at most 100 characters)"
            )
        problems.append(f"{where}: {msg}" if where != "body" else msg)
    return "; ".join(problems)


def idempotency_key(event: WebhookEvent, header: str | None) -> str:
    """The delivery's key: the header or the body ``id``; they must agree when both are sent."""
    if header is not None:
        if not re.fullmatch(_KEY_PATTERN, header):
            raise EventError(
                "invalid_event",
                f"{IDEMPOTENCY_HEADER} header must be 1-200 visible ASCII characters",
            )
        if event.id is not None and event.id != header:
            raise EventError(
                "invalid_event",
                f"{IDEMPOTENCY_HEADER} header and body 'id' differ; send one, or the same value",
            )
        return header
    if event.id is None:
        raise EventError(
            "invalid_event",
            f"no idempotency key: put the event id in the body's 'id' field or an "
            f"{IDEMPOTENCY_HEADER} header, so a retried delivery wakes the agent once",
        )
    return event.id


def goal_text(event: WebhookEvent, key: str) -> str:
    """What the agent reads: the event's type and id, its text, then its payload as JSON."""
    lines = [f"Webhook event {event.type} (id {key})."]
    if event.text is not None:
        lines += ["", event.text]
    if event.payload is not None:
        payload = json.dumps(event.payload, sort_keys=True, ensure_ascii=False, indent=1)
        lines += ["", "Payload:", payload]
    return "\n".join(lines)


def to_trigger(
    event: WebhookEvent, key: str, redaction: RedactionPolicy, received_at: datetime
) -> Trigger:
    """The trigger a delivery becomes: a redacted ``webhook`` goal with a namespaced key.

    The key is prefixed so a sender's ``"1"`` never collides with a CLI or schedule key in
    the agent's dedup memory.
    """
    text = redaction.redact(goal_text(event, key)).text
    trigger_key = f"webhook:{key}"
    return Trigger(
        goal=Goal(kind=GoalKind.WEBHOOK, text=text, idempotency_key=trigger_key),
        idempotency_key=trigger_key,
        new_session=event.new_session,
        received_at=received_at,
    )
