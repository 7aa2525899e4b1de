"""Facts: ``<subject> is <value>`` statements, keyed by their subject.

A fact is a sentence whose whole shape is one of::

    [Note|FYI|Fact|Remember|Update|Correction:] [the] <subject> is|are [now|still] <value>
    [please] set [the] <subject> to <value>
    <subject>: <value>          /   <subject> = <value>

where ``<subject>`` is one to six words and ``<value>`` starts with a value-like token (one
holding a digit, ``@ . / : _``, or quoted) and has at most three tokens. Questions and
negated sentences are not facts. The key is the lower-cased subject without articles, so a
later "the staging DB port is now 6543" supersedes "the staging DB port is 5433".

Facts feed three things: memories (supersession by key), the gate's probe questions, and the
deltas shown when a value changed. Extraction is a rule, not a model, so a check built on it
can be re-run anywhere.
"""

from __future__ import annotations

import re
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from wakeful.consolidation.items import SpanItem
from wakeful.consolidation.text import negated, normalise, sentences

_LEAD = r"(?:(?:note|fyi|fact|remember|update|correction|heads up|for the record)\s*[:,-]\s*)?"
_SUBJECT = r"(?:the\s+)?(?P<subject>[a-z][a-z0-9 _/.'-]{0,60}?)"
_VALUE = r"(?P<value>\S+(?:\s+\S+){0,2}?)"
_END = r"\s*[.;!]?$"
_SHAPES = (
    re.compile(
        rf"^{_LEAD}{_SUBJECT}\s+(?:is|are)\s+(?:now\s+|still\s+|set\s+to\s+)?{_VALUE}{_END}", re.I
    ),
    re.compile(rf"^(?:please\s+)?set\s+{_SUBJECT}\s+to\s+{_VALUE}{_END}", re.I),
    re.compile(rf"^{_SUBJECT}\s*[:=]\s*{_VALUE}{_END}", re.I),
)
_VALUE_LIKE = re.compile(r"[\d@./:_]|^[\"'`].+[\"'`]$")
_ARTICLES = {"the", "a", "an", "our", "your", "my"}
# Labels that open a registry line, not a subject ("Decision: DEC-4 approved").
_NOT_SUBJECTS = {"decision", "decided", "constraint", "rule", "note", "update", "correction"}


class Fact(BaseModel):
    """One ``subject -> value`` statement and where it was made."""

    model_config = ConfigDict(frozen=True)

    key: str
    subject: str
    value: str
    sentence: str
    source_event: int
    at: datetime


def fact_key(subject: str) -> str:
    parts = [w for w in re.split(r"\s+", subject.lower().strip()) if w and w not in _ARTICLES]
    return " ".join(parts)


def parse_fact(sentence: str) -> tuple[str, str] | None:
    """``(subject, value)`` when ``sentence`` is a fact statement, else None."""
    s = normalise(sentence).strip()
    if not s or s.endswith("?") or negated(s):
        return None
    for shape in _SHAPES:
        m = shape.match(s)
        if m is None:
            continue
        subject = m.group("subject").strip(" '")
        value = m.group("value").strip().rstrip(".,;!")
        first = value.split()[0] if value else ""
        if not (1 <= len(subject.split()) <= 6) or not _VALUE_LIKE.search(first):
            continue
        if fact_key(subject) in _NOT_SUBJECTS:
            continue
        return subject, value.strip("\"'`")
    return None


def extract_facts(items: list[SpanItem]) -> list[Fact]:
    """Every fact stated in ``items``, in order."""
    found = []
    for item in items:
        if item.kind == "tool_call":
            continue
        for sentence in sentences(item.text):
            parsed = parse_fact(sentence)
            if parsed is not None:
                subject, value = parsed
                found.append(
                    Fact(
                        key=fact_key(subject),
                        subject=subject,
                        value=value,
                        sentence=sentence,
                        source_event=item.id,
                        at=item.at,
                    )
                )
    return found


def latest_facts(facts: list[Fact]) -> dict[str, Fact]:
    """The last stated value per key (later statements win), keys in first-seen order."""
    out: dict[str, Fact] = {}
    for fact in facts:
        out[fact.key] = fact
    return out
