"""The webhook event format, its JSON schema, and how a delivery becomes a trigger.

A delivery's body is one JSON object (``EVENT_SCHEMA``)::

    {"id": "evt_123", "type": "deploy.failed", "text": "deploy 812 failed", "payload": {...}}

* ``id`` — the sender's event id: the idempotency key (or send an ``Idempotency-Key``
  header; when both are sent they must agree). One key wakes the agent at most once.
* ``type`` — what happened, e.g. ``deploy.failed``.
* ``text`` and/or ``payload`` — what the agent reads: a message, a JSON object, or both.
* ``new_session`` — start a fresh session instead of continuing the current one.
* ``intents``, ``paths``, ``task_class`` — what the work is about, for the compile policy's
  triggers (``wakeful.routing``): the same values ``wakeful trigger --intent/--path/
  --task-class`` takes.
* ``user`` — the user the wake serves (``wakeful.users``): it reads agent-wide memory and this
  user's only, and what it writes is this user's. Left out: an agent-wide wake.

Unknown fields are refused (a typo such as ``txt`` would otherwise be silently lost). The
body becomes a ``webhook`` goal, redacted like tool output (it comes from the world), which
the compiler frames as data inside ``<wake kind="webhook">``.
"""

from __future__ import annotations

import codecs
import json
import re
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from wakeful.compiler.blocks import Goal, GoalKind
from wakeful.contracts import Trigger
from wakeful.idempotency import trigger_key
from wakeful.redaction import RedactionPolicy
from wakeful.routing import (
    MAX_INTENTS,
    MAX_PATHS,
    NAME_PATTERN,
    NAME_RULE,
    PATH_PATTERN,
    PATH_RULE,
    RouteName,
    RoutePath,
    routing,
)
from wakeful.users import MAX_USER_CHARS, USER_PATTERN, user_problem
from wakeful.worker.ingress_json import MAX_JSON_DEPTH, TooDeep, loads

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
MAX_DEPTH = MAX_JSON_DEPTH
_KEY_PATTERN = r"^[\x21-\x7e]{1,200}$"  # visible ASCII, no spaces
_TYPE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,99}$"
_SURROGATE = re.compile("[\ud800-\udfff]")

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
        "intents": {
            "type": "array",
            "items": {"type": "string", "pattern": NAME_PATTERN},
            "maxItems": MAX_INTENTS,
            "description": "Intents of the work, matched by the compile policy's triggers.",
        },
        "paths": {
            "type": "array",
            "items": {"type": "string", "pattern": PATH_PATTERN},
            "maxItems": MAX_PATHS,
            "description": "Paths the work concerns, matched by the triggers' globs.",
        },
        "task_class": {
            "type": "string",
            "pattern": NAME_PATTERN,
            "description": "The kind of task, matched by the triggers' task_classes.",
        },
        "user": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_USER_CHARS,
            "pattern": USER_PATTERN,
            "description": "The user the wake serves: it reads agent-wide memory and this "
            "user's only (default: an agent-wide wake).",
        },
    },
}


class EventError(Exception):
    """A body that is not a valid event; ``code`` is ``bad_json`` or ``invalid_event``
    (answered 422), or ``too_deep`` (answered 400, as on every JSON route of the ingress)."""

    def __init__(self, code: str, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status


class WebhookEvent(BaseModel):
    """The validated body. Mirrors ``EVENT_SCHEMA`` (a test checks that they agree)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    id: str | None = Field(default=None, pattern=_KEY_PATTERN)
    type: str = Field(pattern=_TYPE_PATTERN)
    text: str | None = None
    payload: dict[str, Any] | None = None
    new_session: bool = False
    intents: list[RouteName] = Field(default_factory=list, max_length=MAX_INTENTS)
    paths: list[RoutePath] = Field(default_factory=list, max_length=MAX_PATHS)
    task_class: RouteName | None = None
    user: str | None = None

    @field_validator("user")
    @classmethod
    def _valid_user(cls, user: str | None) -> str | None:
        if user is not None and (problem := user_problem(user)) is not None:
            raise ValueError(problem.removeprefix("user "))
        return user

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
    """Parse and validate a body, or raise :class:`EventError` naming what is wrong.

    The body must be UTF-8 JSON, as the README says: decoded here, strictly, rather than
    left to ``json.loads`` (which also guesses UTF-16 and UTF-32, and keeps a BOM's meaning).
    A string or key holding a lone surrogate (``"\\ud800"``) is not text: refused.
    """
    document = _utf8(body)
    try:
        decoded = loads(document, parse_constant=_no_constants)
    except TooDeep as err:
        raise EventError("too_deep", str(err), status=400) from None
    except (json.JSONDecodeError, ValueError) as err:
        raise EventError(
            "bad_json", f"body is not valid UTF-8 JSON ({_json_reason(err)}); send one JSON object"
        ) from None
    if not isinstance(decoded, dict):
        raise EventError("invalid_event", f"body must be a JSON object, not {_json_type(decoded)}")
    depth, surrogate_at = _walk(decoded)
    if depth > MAX_DEPTH:  # the parse refused deeper bodies; this stays as the walk's bound
        raise EventError("too_deep", str(TooDeep(MAX_DEPTH)), status=400)
    if surrogate_at is not None:
        raise EventError(
            "invalid_event",
            f"{surrogate_at} holds a lone UTF-16 surrogate (a \\ud800-\\udfff escape without "
            "its pair), which is not text; send valid Unicode",
        )
    try:
        return WebhookEvent.model_validate(decoded)
    except ValidationError as err:
        raise EventError("invalid_event", "invalid event: " + _describe(err)) from None


_OTHER_ENCODINGS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


def _utf8(body: bytes) -> str:
    """The body as text: UTF-8 without a byte order mark, or :class:`EventError`."""
    if body.startswith(codecs.BOM_UTF8):
        raise EventError(
            "bad_json", "body starts with a UTF-8 byte order mark; send UTF-8 JSON without a BOM"
        )
    for bom, name in _OTHER_ENCODINGS:
        if body.startswith(bom):
            raise EventError(
                "bad_json", f"body is {name} (it has a {name} byte order mark); send UTF-8 JSON"
            )
    # JSON text starts with an ASCII character: UTF-16/32 without a BOM puts NULs next to it.
    if b"\x00" in body[:4]:
        raise EventError(
            "bad_json", "body looks like UTF-16 or UTF-32 (NUL bytes); send UTF-8 JSON"
        )
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as err:
        raise EventError(
            "bad_json", f"body is not valid UTF-8 (at byte {err.start}); send UTF-8 JSON"
        ) from None


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _walk(value: Any) -> tuple[int, str | None]:
    """Nesting depth, and where a lone surrogate sits (None: nowhere). Iterative: a hostile
    body must not exhaust the stack later. Stops early past ``MAX_DEPTH``."""
    deepest, found, stack = 0, None, [(value, 1, "body")]
    while stack:
        item, level, where = stack.pop()
        if isinstance(item, str):
            if found is None and _SURROGATE.search(item):
                found = where
            continue
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            if level > MAX_DEPTH:
                return level, found
            if isinstance(item, dict):
                for key, child in item.items():
                    if found is None and _SURROGATE.search(key):
                        found = f"a key in {where}"
                    stack.append((child, level + 1, _field(where, key)))
            else:
                stack.extend((child, level + 1, f"{where}[{i}]") for i, child in enumerate(item))
    return deepest, found


def _field(where: str, key: str) -> str:
    shown = key if key.isidentifier() and key.isascii() else "[...]"
    return shown if where == "body" else f"{where}.{shown}"


def _json_type(value: Any) -> str:
    names = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def _json_reason(err: Exception) -> str:
    if isinstance(err, json.JSONDecodeError):
        return f"{err.msg} at line {err.lineno} column {err.colno}"
    return str(err)


def _describe(err: ValidationError) -> str:
    problems = []
    for item in err.errors(include_url=False, include_input=False)[:5]:
        where = ".".join(str(p) for p in item["loc"]) or "body"
        msg = str(item["msg"]).removeprefix("Value error, ")
        field = str(item["loc"][0]) if item["loc"] else ""
        if item["type"] == "extra_forbidden":
            msg = (
                "unknown field (allowed: id, type, text, payload, new_session, intents,"
                " paths, task_class, user)"
            )
        elif item["type"] == "string_pattern_mismatch" and field in ("intents", "task_class"):
            msg = f"use {NAME_RULE}"
        elif item["type"] == "string_pattern_mismatch" and field == "paths":
            msg = f"use {PATH_RULE}"
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


def goal_text(event: WebhookEvent) -> str:
    """What the agent reads: the event's type, its text, then its payload as JSON. Not its
    id: a sender's key may hold a secret, and the goal is stored and sent to Temporal."""
    lines = [f"Webhook event {event.type}."]
    if event.text is not None:
        lines += ["", event.text]
    if event.payload is not None:
        payload = json.dumps(event.payload, sort_keys=True, ensure_ascii=False, indent=1)
        lines += ["", "Payload:", payload]
    return "\n".join(lines)


def to_trigger(
    event: WebhookEvent, key: str, redaction: RedactionPolicy, received_at: datetime
) -> Trigger:
    """The trigger a delivery becomes: a redacted ``webhook`` goal keyed by the digest of the
    sender's key (:func:`wakeful.idempotency.trigger_key`: namespaced, so a sender's ``"1"``
    never collides with a CLI or schedule key, and never the key itself)."""
    text = redaction.redact(goal_text(event)).text
    key_of_trigger = trigger_key("webhook", key)
    route = routing(event.intents, event.paths, event.task_class)  # validated already
    return Trigger(
        goal=route.apply(Goal(kind=GoalKind.WEBHOOK, text=text, idempotency_key=key_of_trigger)),
        idempotency_key=key_of_trigger,
        new_session=event.new_session,
        received_at=received_at,
        user=event.user,  # validated already
    )
