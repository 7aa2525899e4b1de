"""The simulator's handoff-note writer: a deterministic, extractive stand-in for a model.

It answers requests whose last user message opens with ``# Write session handoff note``
(the prompt :mod:`wakeful.activities.handoff_note` sends) with the JSON note it asks for:
the goal is the first ask that names one (else the latest), the state the last reply,
decisions are registry ids the turns mention or the prompt marks ``(this session)``,
blockers and next actions are the user's sentences that state them, and evidence names the
turns they came from. It shares no code with the note's checks on purpose: the checks must
judge it like any other model.
"""

from __future__ import annotations

import json
import re
from typing import Any

from wakeful.testing.simulator.side_requests import last_turn_opens_with

HEADER = "# Write session handoff note"
_ITEM = re.compile(r"^\[(?P<label>e\d+) (?P<who>[^\]]*)\]\s?(?P<text>.*)$")
_REGISTRY = re.compile(r"^- \[(?P<id>[^\]]+)\] ")
_SPLIT = re.compile(r"(?<=[.!?])\s+")
_BLOCKER = re.compile(
    r"\b(?:blocked|blocker|blocking|waiting (?:on|for)|stuck|cannot|can't|until)\b", re.I
)
_GOAL = re.compile(r"\b(?:goal|objective|task)\b", re.I)
_NEXT = re.compile(r"\b(?:next|todo|need to|then we|after that|remaining)\b", re.I)


def _turns(prompt: str) -> list[tuple[str, str, str]]:
    lines = prompt.split("## Session turns", 1)[-1].split("\n## Note", 1)[0].splitlines()
    items: list[tuple[str, str, str]] = []
    for line in lines:
        m = _ITEM.match(line)
        if m:
            items.append((m.group("label"), m.group("who"), m.group("text")))
        elif items and line.startswith("  "):
            label, who, text = items[-1]
            items[-1] = (label, who, f"{text} {line.strip()}")
    return items


def is_handoff_request(body: Any) -> bool:
    """Is this request body (any wire format) a handoff-note prompt?"""
    return last_turn_opens_with(body, HEADER)


def handoff_text(prompt: str) -> str | None:
    """The JSON note answering a handoff prompt, or None for any other message."""
    if not prompt.lstrip().startswith(HEADER):
        return None
    entries = prompt.split("## Registry decisions", 1)[-1].split("\n## ", 1)[0].splitlines()
    registry = [(m.group("id"), line) for line in entries if (m := _REGISTRY.match(line))]
    turns = _turns(prompt)
    asks = [(label, text) for label, who, text in turns if who == "user"]
    replies = [text for _, who, text in turns if who == "assistant"]
    # The goal: the first ask that says it is one, else the latest ask (not a command).
    plain = [t for _, t in asks if not t.startswith("/")] or [t for _, t in asks]
    goal = next((t for t in plain if _GOAL.search(t)), plain[-1] if plain else "")
    blockers: dict[str, str] = {}
    actions: dict[str, str] = {}
    for label, text in asks:
        for sentence in _SPLIT.split(text):
            if _BLOCKER.search(sentence):
                blockers.setdefault(sentence.strip(), label)
            elif _NEXT.search(sentence):
                actions.setdefault(sentence.strip(), label)
    said = " ".join(text for _, _, text in turns)
    decisions = [
        rid
        for rid, line in registry
        if "(this session)" in line or re.search(rf"(?<![\w-]){re.escape(rid)}(?![\w-])", said)
    ]
    evidence = list(dict.fromkeys([*blockers.values(), *actions.values()]))
    note = {
        "goal": goal[:300] or "(no ask in the session)",
        "current_state": (replies[-1] if replies else "no reply yet")[:300],
        "decisions": decisions,
        "blockers": list(blockers),
        "next_actions": list(actions),
        "evidence": evidence,
    }
    return json.dumps(note, indent=2)
