"""A session's closing note written by the model, and the checks it must pass.

When a session ends, one summarising call through the agent's own provider reads the
session's newest turns (bounded by ``Agent.handoff_note_tokens``) and answers with a JSON
note: goal, current state, decisions by registry id, blockers, next actions, evidence. The
note replaces the template note (:func:`wakeful.activities.sessions.session_note`) only if it
passes checks of the kind consolidation's gate applies to summaries (model-free, fail closed):

``parse``         the answer is one JSON object with a non-empty goal and current state.
``decisions``     every decision id it names exists in the live registry.
``registry_ids``  no load-bearing id of the session is dropped: ids promoted as it ended and
                  registered ids its turns mention appear among the note's decisions.
``invented``      no number, date or version appears that the session never had.
``evidence``      evidence names events of the session (``e12``) only.

Any miss, or a provider error, keeps the template note; the reason is recorded.

The call is the agent's last request continued (:func:`cached_handoff_request`): the same
tools, system and messages with their cache breakpoints, the model's last reply, then the
ask for the note as a user turn. Its transcript is then a cache read, not a second copy
under another system prompt; the ask lists the turns' labels and openings for evidence.
A session with no stored request (or one of another shape) is asked with
:func:`handoff_request`, the transcript in the prompt.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from wakeful.consolidation.gate import GateCheck, GateInput, GateResult, check_invented
from wakeful.consolidation.items import SpanItem
from wakeful.consolidation.prompt import continued_request, json_in_answer, request_body
from wakeful.consolidation.text import contains_token, registry_ids
from wakeful.substrate.records import DecisionRecord, HandoffBody
from wakeful.workflows.pacing import ttl_seconds

__all__ = [
    "HEADER",
    "SYSTEM",
    "build_prompt",
    "cache_ttl_s",
    "cached_handoff_request",
    "check_note",
    "handoff_request",
    "parse_note",
    "required_ids",
]

HEADER = "# Write session handoff note"
SYSTEM = (
    "You write the handoff note an autonomous agent's next session starts from. It replaces "
    "the session's transcript: dropping a decision id, a blocker or a next step loses it."
)
_RULES = (
    "Answer with one JSON object and nothing else, with these keys:",
    '  "goal": the goal the session worked towards (one or two sentences),',
    '  "current_state": where the work stands now,',
    '  "decisions": ids from the registry below that bear on the work, every one marked',
    '    "(this session)" among them, and no id that is not listed,',
    '  "blockers": what stops progress, one string each,',
    '  "next_actions": what to do next, one string each,',
    '  "evidence": labels of the turns below that support the note (like e12).',
    "Keep numbers and versions exactly as written; invent none.",
)
_EVIDENCE = re.compile(r"^e(\d+)$")
# In an ask continuing the agent's own request the turns are in the conversation above:
# each is listed by its label and opening only, so the ask stays small (and uncached).
_OPENING_CHARS = 200
_CONTINUED = "The session's turns are the conversation above; the list below gives their labels."


def required_ids(
    items: Sequence[SpanItem], registry: Sequence[DecisionRecord], promoted: Sequence[str]
) -> list[str]:
    """The session's load-bearing ids: promoted as it ended, or registered and mentioned."""
    known = {d.decision_id for d in registry}
    wanted = list(promoted)
    for item in items:
        wanted += [i for i in registry_ids(item.text) if i in known]
    return list(dict.fromkeys(wanted))


def build_prompt(
    session_id: str,
    reason: str,
    items: Sequence[SpanItem],
    registry: Sequence[DecisionRecord],
    promoted: Sequence[str] = (),
    *,
    continued: bool = False,
) -> str:
    """The user message asking for the note of a session whose newest turns are ``items``;
    the registry entries the note must name are marked ``(this session)``. ``continued``:
    the ask follows the session's own conversation, so each turn is listed by its label
    and opening, not whole."""
    required = set(required_ids(items, registry, promoted))
    lines = [
        HEADER,
        f"session: {session_id}",
        f"ended: {reason}",
        *([_CONTINUED] if continued else []),
        *_RULES,
        "",
        "## Registry decisions",
        *(
            [
                f"- [{d.decision_id}]{' (this session)' * (d.decision_id in required)} {d.text}"
                for d in registry
            ]
            or ["- (none)"]
        ),
        "",
        "## Session turns",
    ]
    for item in items:
        text = item.text.strip()
        if continued and len(text) > _OPENING_CHARS:
            text = text[:_OPENING_CHARS].rstrip() + " ..."
        text = text.replace("\n", "\n  ")
        lines.append(f"[{item.label} {item.role or item.kind}] {text}")
    lines += ["", "## Note"]
    return "\n".join(lines)


def handoff_request(provider: str, model: str, prompt: str, max_tokens: int) -> dict[str, Any]:
    # Same shapes as consolidation's request, with this task's system text.
    return request_body(provider, model, prompt, max_tokens, system=SYSTEM)


# The agent's last request (as sent) continued by its reply and the ask for the note: the
# same continuation a summary of a cached span uses (consolidation.prompt).
cached_handoff_request = continued_request


def cache_ttl_s(provider: str, window: dict[str, Any]) -> int:
    """How long after it was sent ``window``'s prefix stays cached: its longest breakpoint
    TTL, else the provider's default. Past it, continuing the request would write the cache
    again (Anthropic bills that above plain input) for a single call."""
    ttls: list[str | None] = [None]

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            control = node.get("cache_control")
            if isinstance(control, dict) and isinstance(control.get("ttl"), str):
                ttls.append(control["ttl"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(window)
    retention = window.get("prompt_cache_retention")
    if isinstance(retention, str) and retention != "in_memory":
        ttls.append(retention)
    known = [t for t in ttls if t is None or t in ("5m", "1h", "24h")]
    return max(ttl_seconds(provider, t) for t in known)


def parse_note(text: str) -> HandoffBody | str:
    """The note in a model's answer, or why there is none (one line)."""
    data = json_in_answer(text, dict)
    if isinstance(data, str):
        return f"parse: {data}"
    for key in ("decisions", "blockers", "next_actions", "evidence"):
        if isinstance(data.get(key), str):
            data[key] = [data[key]]
        elif isinstance(data.get(key), list):
            data[key] = [str(v) for v in data[key]]
    try:
        note = HandoffBody.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        return f"parse: field {'.'.join(map(str, first['loc']))}: {first['msg']}"
    if not note.goal.strip() or not note.current_state.strip():
        return "parse: goal or current_state is empty"
    return note


def check_note(
    note: HandoffBody,
    items: Sequence[SpanItem],
    registry: Sequence[DecisionRecord],
    promoted: Sequence[str] = (),
) -> GateResult:
    """Judge a model-written note against the session it summarises."""
    known = {d.decision_id: d.text for d in registry}
    unknown = [d for d in note.decisions if d not in known]
    named = "\n".join(note.decisions)
    wanted = required_ids(items, registry, promoted)
    dropped = [i for i in wanted if not contains_token(named, i)]
    labels = {item.label for item in items}
    stray = [e for e in note.evidence if _EVIDENCE.match(e) and e not in labels]
    stray += [e for e in note.evidence if not _EVIDENCE.match(e)]
    prose = "\n".join([note.goal, note.current_state, *note.blockers, *note.next_actions])
    cited = [known[d] for d in note.decisions if d in known]
    span = GateInput(items=tuple(items))
    checks = [
        GateCheck(name="decisions", passed=not unknown, missing=tuple(unknown)),
        GateCheck(name="registry_ids", passed=not dropped, missing=tuple(dropped)),
        check_invented(span, prose, cited),
        GateCheck(name="evidence", passed=not stray, missing=tuple(stray)),
    ]
    return GateResult(passed=all(c.passed for c in checks), checks=tuple(checks))
