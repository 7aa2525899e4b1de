"""The simulator's summariser: a deterministic, extractive stand-in for a model.

It answers requests whose last user message opens with ``# Consolidate history span``
(the prompt Wakeful's consolidation sends). Like a careful model it keeps what carries
weight and drops small talk: a sentence is kept when it holds a digit, an upper-case id, a
negation, or a rule/decision word; sentences restating a registry entry get the entry's id;
sentences stating a value listed as superseded are marked. It shares no code with the
consolidation gate on purpose — the gate must judge it like any other model.
"""

from __future__ import annotations

import re

HEADER = "# Consolidate history span"
_ITEM = re.compile(r"^\[(?P<label>[es]\d+) (?P<who>[^\]]*)\]\s?(?P<text>.*)$")
# From raw tool output a model reports ids and stated facts, not every log line.
_TOOL_WORTHY = re.compile(
    r"\b[A-Z][A-Z0-9]*-\d|^(?:the\s+)?[a-z][\w ./-]{2,60}?\s+(?:is|are)\s+\S+[.]?$", re.I
)
_REGISTRY = re.compile(r"^- \[(?P<id>[^\]]+)\] (?P<text>.+)$")
_SUPERSEDED = re.compile(r"^- (?P<subject>.+?): (?P<old>.+?) -> (?P<new>.+)$")
_SPLIT = re.compile(r"(?<=[.!?])\s+")
_SALIENT = re.compile(
    r"\d|\b[A-Z][A-Z0-9]*-\d|\b(?:not|never|no|none|nor|cannot|without|must|mustn't|shall|"
    r"only|may|allowed|permitted|forbidden|prohibited|requires?|approved|rejected|decided|"
    r"agreed|accepted|declined|always|superseded|set to|is now)\b|n't\b|@\w",
    re.IGNORECASE,
)
_LEVEL_NAME = {"1": "turn span", "2": "session", "3": "period"}


def _sections(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    current = ""
    for line in text.splitlines():
        if line.startswith("## "):
            current = line[3:].strip().lower()
            out[current] = []
        elif current:
            out[current].append(line)
    return out


def _items(lines: list[str]) -> list[tuple[str, str, str]]:
    """``(label, speaker, text)`` per span item."""
    items: list[tuple[str, str, str]] = []
    for line in lines:
        m = _ITEM.match(line)
        if m:
            items.append((m.group("label"), m.group("who"), m.group("text")))
        elif items and line.strip():
            label, who, text = items[-1]
            items[-1] = (label, who, f"{text}\n{line}")
    return items


def _norm(s: str) -> str:
    return " ".join(s.lower().split()).rstrip(".")


def summary_text(prompt: str) -> str | None:
    """The summary of a consolidation prompt, or None for any other message."""
    if not prompt.lstrip().startswith(HEADER):
        return None
    level = re.search(r"^level: (\d)", prompt, re.MULTILINE)
    sections = _sections(prompt)
    registry = [
        (m.group("id"), m.group("text"))
        for m in map(_REGISTRY.match, sections.get("registry entries from this span", []))
        if m
    ]
    superseded = [
        (m.group("subject"), m.group("old"), m.group("new"))
        for m in map(_SUPERSEDED.match, sections.get("superseded values", []))
        if m
    ]
    items = _items(sections.get("span", []))
    kept: dict[str, str] = {}
    for _, who, text in items:
        if who.startswith("tool_call"):
            continue
        tool = who.startswith("tool_result")
        for line in text.splitlines():
            line = re.sub(r"^\s*-\s+", "", line).strip()
            if not line or line.startswith("Summary ("):
                continue
            for sentence in _SPLIT.split(line) if "[" not in line else [line]:
                worthy = _TOOL_WORTHY if tool else _SALIENT
                if worthy.search(sentence):
                    kept.setdefault(_norm(sentence), sentence.strip())
    lines = []
    for sentence in kept.values():
        for rid, rtext in registry:
            if _norm(rtext) == _norm(sentence) and rid not in sentence:
                sentence = f"[{rid}] {sentence}"
        for subject, old, new in superseded:
            states = re.search(rf"(?<![\w.-]){re.escape(old)}(?![\w-])", sentence)
            if states and subject.lower() in sentence.lower() and "[superseded:" not in sentence:
                sentence = f"{sentence} [superseded: {subject} is now {new}]"
        lines.append(f"- {sentence}")
    for rid, rtext in registry:
        if not any(rid.split()[0] in line for line in lines):
            lines.append(f"- [{rid}] {rtext}")
    first = items[0][0] if items else "?"
    last = items[-1][0] if items else "?"
    name = _LEVEL_NAME.get(level.group(1) if level else "1", "span")
    return "\n".join([f"Summary ({name}) of {first}..{last}:", *lines])
