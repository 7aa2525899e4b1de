"""Scripted replies: deterministic model behaviour for tests, demos and benchmarks.

Script format (YAML or JSON). Either a bare list of steps or a mapping::

    default: planner          # what answers once the steps run out: planner | echo
    steps:
      - text: "Let me look."
        tool_calls:
          - name: read_file
            input: {path: README.md}
      - text: "All done."          # stop_reason defaults to end_turn (tool_use if calls)
      - error: {status: 429, retry_after: 2}
      - error: {status: 529}       # overloaded (Anthropic); OpenAI endpoints answer 503
      - text: "cut off"
        stop_reason: max_tokens
        times: 2                   # this step answers two calls
      - text: "Never finished."
        trickle: true              # bytes keep coming, the reply never ends (see below)
    handoff:                  # replies to session-end note prompts (their own cursor)
      - error: {status: 400}

A ``trickle`` step answers as a provider that keeps the connection busy and never finishes:
streamed, its reply's first events go out and then only keep-alive comments, a non-streamed
reply sends whitespace; until the caller hangs up. No read timeout ends such a call.

Each scope (API key) walks the script with its own cursor, so parallel tests sharing one
server do not consume each other's steps. Stop reasons use Anthropic's vocabulary
(``end_turn``, ``tool_use``, ``max_tokens``, ``stop_sequence``); the OpenAI endpoints map
them to ``stop`` / ``tool_calls`` / ``length``.

The default *planner* responder: after tool results it summarises them; when the last user
message names one of the request's tools it calls that tool (arguments from a JSON object
after the name, ``key=value`` pairs, or the first path-like word); otherwise it echoes.
It honours the request's ``tool_choice`` as the providers do: when a tool must be called
(Anthropic ``any`` or ``tool``, OpenAI ``required`` or a named function) its reply calls
one - the named tool, else the agent's answer tool (``final_result``), else a tool the
message names, else the first - with the arguments the message gives and placeholders for
the other required ones, made from the tool's schema (so a typed answer validates); under
``none`` it calls no tool. Scripted steps are sent as written, whatever the request asks.
A consolidation prompt (opening ``# Consolidate history span``) is answered with an
extractive summary (see :mod:`wakeful.testing.simulator.summarise`), and a handoff prompt
(opening ``# Write session handoff note``) with a JSON note (see
:mod:`wakeful.testing.simulator.handoff`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from wakeful.testing.simulator.handoff import handoff_text
from wakeful.testing.simulator.summarise import summary_text
from wakeful.tool_spec import FINAL_RESULT

__all__ = [
    "Conversation",
    "ErrorStep",
    "Script",
    "ScriptedCall",
    "SimReply",
    "Step",
    "example_value",
    "planner_reply",
]

StopReason = Literal["end_turn", "tool_use", "max_tokens", "stop_sequence"]


class ScriptedCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    input: dict[str, Any] = Field(default_factory=dict)


class ErrorStep(BaseModel):
    model_config = ConfigDict(extra="forbid")

    status: int
    message: str | None = None
    retry_after: float | None = None


class Step(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str | None = None
    tool_calls: list[ScriptedCall] = Field(default_factory=list)
    stop_reason: StopReason | None = None
    error: ErrorStep | None = None
    times: int = Field(default=1, ge=1)
    trickle: bool = False


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid")

    steps: list[Step] = Field(default_factory=list)
    default: Literal["planner", "echo"] = "planner"
    # Replies to session-end note prompts, in order (own cursor: they take no ``steps``);
    # once they run out, the extractive note of wakeful.testing.simulator.handoff answers.
    handoff: list[Step] = Field(default_factory=list)

    @classmethod
    def parse(cls, data: Any) -> Script:
        if isinstance(data, list):
            data = {"steps": data}
        return cls.model_validate(data or {})

    @classmethod
    def load(cls, path: str | Path) -> Script:
        """Read a script file; YAML is a superset of JSON, so one parser reads both."""
        return cls.parse(yaml.safe_load(Path(path).read_text(encoding="utf-8")))

    def step_at(self, cursor: int) -> Step | None:
        return _step_at(self.steps, cursor)

    def handoff_step_at(self, cursor: int) -> Step | None:
        return _step_at(self.handoff, cursor)


def _step_at(steps: list[Step], cursor: int) -> Step | None:
    for step in steps:
        if cursor < step.times:
            return step
        cursor -= step.times
    return None


@dataclass(frozen=True)
class SimReply:
    text: str
    tool_calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    stop_reason: str = "end_turn"


@dataclass
class Conversation:
    """What a responder may look at, independent of the wire format."""

    tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    last_user_text: str = ""
    tool_results: list[str] = field(default_factory=list)
    # The request's tool_choice: must the reply call a tool, and which one (None: any).
    must_call: bool = False
    forced_tool: str | None = None


def reply_from_step(step: Step) -> SimReply:
    calls = tuple((c.name, dict(c.input)) for c in step.tool_calls)
    stop = step.stop_reason or ("tool_use" if calls else "end_turn")
    return SimReply(step.text or "", calls, stop)


_PATHLIKE = re.compile(r"[\w./-]*[/.][\w./-]+")


def _arguments(tool: str, schema: dict[str, Any], text: str) -> dict[str, Any]:
    after = text.split(tool, 1)[1] if tool in text else ""
    brace = after.find("{")
    if brace != -1:
        try:
            parsed = json.loads(after[brace : after.rfind("}") + 1])
            if isinstance(parsed, dict):
                return parsed
        except json.JSONDecodeError:
            pass
    props: dict[str, Any] = schema.get("properties") or {}
    args: dict[str, Any] = {}
    for key in props:
        found = re.search(rf"\b{re.escape(key)}\s*[=:]\s*(\"[^\"]*\"|'[^']*'|\S+)", text)
        if found:
            args[key] = found.group(1).strip("\"'").rstrip(".,;")
    for key in schema.get("required") or []:
        if key not in args and (props.get(key) or {}).get("type", "string") == "string":
            word = _PATHLIKE.search(after)
            args[key] = word.group(0).rstrip(".,;") if word else ""
    return args


def planner_reply(conversation: Conversation, *, echo_only: bool = False) -> SimReply:
    """The planner's reply, calling a tool when the request's ``tool_choice`` requires."""
    reply = _planned(conversation, echo_only=echo_only)
    forced = conversation.forced_tool
    called = [name for name, _ in reply.tool_calls]
    if not conversation.must_call or (called and (forced is None or called == [forced])):
        return reply
    return _forced_call(conversation, reply.text)


def _forced_call(conversation: Conversation, said: str) -> SimReply:
    """A reply calling the tool the request requires (see the module's docstring)."""
    tools, text = conversation.tools, conversation.last_user_text
    named = [
        n
        for n in sorted(tools, key=len, reverse=True)
        if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", text)
    ]
    order = [conversation.forced_tool, FINAL_RESULT if FINAL_RESULT in tools else None, *named]
    name = next((n for n in order if n), None) or (sorted(tools)[0] if tools else None)
    if name is None:  # a provider refuses a required tool call without tools
        return SimReply(said)
    schema = tools.get(name) or {}
    args = _arguments(name, schema, text)
    props = schema.get("properties") or {}
    for key in schema.get("required") or []:
        if args.get(key) in (None, ""):
            args[key] = example_value(props.get(key, {}), schema, said or text)
    return SimReply(f"Calling {name}.", ((name, args),), "tool_use")


def example_value(schema: Any, root: dict[str, Any], text: str, depth: int = 0) -> Any:
    """A value ``schema`` accepts: its const, default or first enum value, else the least of
    its type (an empty list, zero, false) or, for a string, ``text`` (cut to its bounds).
    ``root`` holds the ``$defs`` a ``$ref`` points into."""
    if not isinstance(schema, dict) or depth > 16:
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        return example_value(target, root, text, depth + 1)
    for key in ("const", "default"):
        if key in schema:
            return schema[key]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = [o for o in schema.get(key) or [] if o.get("type") != "null"]
        if options:
            return example_value(options[0], root, text, depth + 1)
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties") or {}
        return {
            k: example_value(props.get(k, {}), root, text, depth + 1)
            for k in schema.get("required") or []
        }
    if kind == "array":
        item = example_value(schema.get("items", {}), root, text, depth + 1)
        return [item] * int(schema.get("minItems", 0))
    if kind in ("integer", "number"):
        if "minimum" in schema:
            return schema["minimum"]
        return schema["exclusiveMinimum"] + 1 if "exclusiveMinimum" in schema else 0
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return _example_string(schema, text)


def _example_string(schema: dict[str, Any], text: str) -> str:
    formats = {"date-time": "2026-01-01T00:00:00Z", "date": "2026-01-01", "time": "00:00:00"}
    value = formats.get(str(schema.get("format")), text.strip()[:200] or "answer")
    value = value[: int(schema.get("maxLength", len(value)))]
    return value.ljust(int(schema.get("minLength", 0)), ".")


def _planned(conversation: Conversation, *, echo_only: bool) -> SimReply:
    if conversation.tool_results:
        summary = "; ".join(r[:200] for r in conversation.tool_results)
        return SimReply(f"Tool results received: {summary}")
    text = conversation.last_user_text
    consolidated = summary_text(text)  # consolidation prompts get an extractive summary
    if consolidated is not None:
        return SimReply(consolidated)
    note = handoff_text(text)  # session-end prompts get a JSON handoff note
    if note is not None:
        return SimReply(note)
    if not echo_only:
        for name in sorted(conversation.tools, key=len, reverse=True):
            if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text):
                args = _arguments(name, conversation.tools[name], text)
                return SimReply(f"Calling {name}.", ((name, args),), "tool_use")
    return SimReply(f"You said: {text[:500]}")
