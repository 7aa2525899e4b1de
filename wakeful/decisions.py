"""The decision registry's vocabulary: keys, the built-in ``remember_decision`` tool, ids.

The load-bearing registry holds what an agent must not forget: rules it was given and
choices that were made. Three writers share it, each marked in a decision's ``source``:

* ``consolidation`` — the promotion rules (:mod:`wakeful.consolidation.rules`) lift stated
  constraints and decisions out of the history, in a consolidation round and when a session
  ends;
* ``tool`` — the model, through the built-in ``remember_decision`` tool of an agent built
  with ``Agent(..., decisions=True)``;
* ``person`` — ``wakeful decisions add|supersede|retire`` and the store's API.

A decision written under a **key** (a stable name: ``db.engine``) supersedes the decision
live on that key, so the registry holds one current answer per key. A person's decision
stands until a person changes it: another writer's decision on its key is a *proposal*
(``proposal_for``), never live, until a person accepts or retires it.

Whoever writes, :func:`check_decision` is the one check of what a decision may say: the
store runs it on every write (``RegistryRepo.record_decision``).

The tool is opt-in: its schema is one more tool block in the stable prefix, and adding it
to every agent would change every existing agent's prefix (a cache miss on its next wake)
and offer the model a tool most agents have no use for.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from wakeful.errors import UserError
from wakeful.tool_spec import Tool, ToolContext

__all__ = [
    "KEY_RULE",
    "REMEMBER_DECISION",
    "DecisionFields",
    "RememberArgs",
    "check_decision",
    "check_decision_id",
    "check_key",
    "check_text",
    "is_builtin_decision_tool",
    "parse_remember",
    "remember_decision_tool",
]

REMEMBER_DECISION = "remember_decision"
KEY_RULE = "1-100 characters: letters, digits and . _ : / - (starting with a letter or digit)"
_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,99}$")
MAX_TEXT = 2_000  # a decision is a sentence or two; the registry is in every window


def check_key(key: object) -> str:
    """A decision key, or one line saying what a key may be."""
    # fullmatch: ``$`` alone would let a key end in a newline.
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise UserError(f"decision key {_shown(key)} is not valid: a key is {KEY_RULE}")
    return key


def check_decision_id(decision_id: object) -> str:
    """A decision id given by its writer (``DEC-12``): the shape a key has."""
    if not isinstance(decision_id, str) or not _KEY.fullmatch(decision_id):
        raise UserError(f"decision id {_shown(decision_id)} is not valid: an id is {KEY_RULE}")
    return decision_id


def _shown(value: object, limit: int = 60) -> str:
    """``value`` as an error names it: its repr, cut short when long (one line)."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}… ({len(value):,} characters)"
    return repr(value)


def check_text(text: object, field: str = "text") -> str:
    """A decision's text (or rationale): non-empty, one or two sentences."""
    if not isinstance(text, str) or not text.strip():
        raise UserError(f"the decision's {field} must be a non-empty string")
    if len(text) > MAX_TEXT:
        raise UserError(
            f"the decision's {field} has {len(text):,} characters; keep it under {MAX_TEXT:,}"
        )
    return " ".join(text.split())  # one line: the registry renders one decision per line


class DecisionFields(NamedTuple):
    """A decision's key, text and rationale as the registry stores them."""

    key: str
    text: str
    rationale: str | None


def check_decision(key: object, text: object, rationale: object = None) -> DecisionFields:
    """The one check of what a decision may say, whoever writes it (the CLI, the
    ``remember_decision`` tool, a caller of the store's API): the store runs it on every
    write, so nothing that bypasses the CLI reaches the registry unchecked. A key is
    :data:`KEY_RULE`; the text and the rationale are one or two sentences (at most
    :data:`MAX_TEXT` characters, whitespace folded to one line); an empty rationale is none.
    Raises a one-line :class:`UserError` naming what was wrong."""
    return DecisionFields(
        key=check_key(key),
        text=check_text(text),
        rationale=None if rationale in (None, "") else check_text(rationale, "rationale"),
    )


class RememberArgs:
    """The model's arguments to ``remember_decision``, validated."""

    __slots__ = ("key", "rationale", "text")

    def __init__(self, key: str, text: str, rationale: str | None) -> None:
        self.key, self.text, self.rationale = key, text, rationale


def parse_remember(args: dict[str, Any]) -> RememberArgs:
    """Validate the tool's arguments (a :class:`UserError` the model reads when wrong)."""
    extra = sorted(set(args) - {"key", "text", "rationale"})
    if extra:
        raise UserError(f"remember_decision takes key, text and rationale; not {', '.join(extra)}")
    fields = check_decision(args.get("key"), args.get("text"), args.get("rationale"))
    return RememberArgs(key=fields.key, text=fields.text, rationale=fields.rationale)


def _answered_by_the_activity(args: dict[str, Any], ctx: ToolContext) -> str:
    # The tool activity answers remember_decision itself: it needs the substrate, which a
    # tool function never sees. Reaching this means the call bypassed it.
    raise RuntimeError("remember_decision is answered by Wakeful's tool activity")


def remember_decision_tool() -> Tool:
    """The built-in tool, as an agent built with ``decisions=True`` holds it: its schema
    joins the agent's tools (so its spec and prefix say it is offered) and its limits the
    agent's runtime; the tool activity runs it against the registry."""
    return Tool(
        name=REMEMBER_DECISION,
        description=(
            "Record a decision or rule that must hold from now on, under a stable key (e.g."
            " 'db.engine'). It stays in your context, as '[id] key: text', across sessions"
            " and consolidations. Recording under a key that already has a decision replaces"
            " that decision."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "key": {
                    "type": "string",
                    "pattern": _KEY.pattern,
                    "description": f"A stable name for what is decided: {KEY_RULE}.",
                },
                "text": {"type": "string", "description": "The decision, in one sentence."},
                "rationale": {"type": "string", "description": "Why (optional)."},
            },
            "required": ["key", "text"],
            "additionalProperties": False,
        },
        fn=_answered_by_the_activity,
        timeout_s=30.0,
    )


def is_builtin_decision_tool(tool: object) -> bool:
    """The tool :func:`remember_decision_tool` made (not a user's tool of that name)."""
    return isinstance(tool, Tool) and tool.fn is _answered_by_the_activity
