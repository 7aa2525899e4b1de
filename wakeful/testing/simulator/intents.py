"""The simulator's intent classifier: a deterministic stand-in for a model.

It answers requests whose last user message opens with ``# Classify goal intents`` (the
prompt :mod:`wakeful.activities.intent_model` sends) with the JSON list it asks for: the
intents whose name, or one of whose listed patterns, occurs in the goal as a whole word or
phrase, case-insensitively. It shares no code with the rules classifier on purpose: the
classifier's parsing must judge it like any other model's answer.
"""

from __future__ import annotations

import json
import re
from typing import Any

from wakeful.testing.simulator.side_requests import last_turn_opens_with

HEADER = "# Classify goal intents"
_INTENT = re.compile(r"^- (?P<name>[^:]+):\s?(?P<hints>.*)$")


def is_intents_request(body: Any) -> bool:
    """Is this request body (any wire format) an intent-classification prompt?"""
    return last_turn_opens_with(body, HEADER)


def _occurs(phrase: str, text: str) -> bool:
    words = [re.escape(w) for w in phrase.split()]
    return (
        bool(words)
        and re.search(r"(?<!\w)" + r"\s+".join(words) + r"(?!\w)", text, re.IGNORECASE) is not None
    )


def intents_text(prompt: str) -> str | None:
    """The JSON list answering a classification prompt, or None for any other message."""
    if not prompt.lstrip().startswith(HEADER):
        return None
    listed = prompt.split("## Intents", 1)[-1].split("\n## Goal", 1)[0].splitlines()
    goal = prompt.split("\n## Goal", 1)[-1]
    found = []
    for line in listed:
        m = _INTENT.match(line.strip())
        if m is None:
            continue
        name = m.group("name").strip()
        hints = [h.strip() for h in m.group("hints").split(";")]
        if any(_occurs(p, goal) for p in (name, *hints) if p):
            found.append(name)
    return json.dumps(found)
