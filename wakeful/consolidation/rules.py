"""Promotion rules: which sentences are load-bearing, lifted into the registry before a span
is rewritten.

A sentence is read from a **user turn** (the person giving the agent its orders) unless noted.
Questions (ending in ``?``) never promote.

Constraints — rules that change what the agent may do, where, or how work is merged:

* ``must`` / ``mustn't`` / ``shall`` (not "must say", "must admit");
* ``never`` / ``do not`` / ``don't`` / ``always`` opening the sentence (after an optional
  "please"), or after *you*, *we*, *agents*;
* ``only … may|can|is allowed to`` and ``no one may|can``;
* ``is|are (not) allowed|permitted``, ``forbidden``, ``prohibited``;
* ``require(s)|need(s) … approval|review|sign-off``.

Decisions — things accepted or turned down:

* ``approved``, ``rejected``, ``decided``, ``agreed``, ``accepted``, ``declined``,
  ``signed off`` — unless a negation sits just before the verb ("not yet approved",
  "haven't decided");
* from any turn (the agent's too): a sentence opening with ``Decision:`` or ``Decided:``.

Ids: a sentence that opens with a registry id (``C-7: …`` or ``[ADR-3] …``) keeps it;
otherwise the id is ``LB-<event>`` for constraints and ``DEC-<event>`` for decisions, with
``-2``, ``-3`` … for further promotions of the same event. Ids are derived from the log, so a
retried promotion registers the same ids (the registry keeps the first write).

Expiry: ``until YYYY-MM-DD`` (end of that day, UTC) or ``for [the next] N hours|days|weeks``
from the event's time; otherwise the policy's ``constraint_ttl`` / ``decision_ttl``.

Revocations: ``supersedes|replaces|revokes|lifts|cancels|overrides|withdraws <ID>`` and
``<ID> no longer applies`` / ``<ID> is revoked|lifted|void|withdrawn|cancelled`` retire the
named entry; the revoking sentence's own promotion (if any) is its successor.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict

from wakeful.consolidation.items import SpanItem
from wakeful.consolidation.policy import ConsolidationPolicy
from wakeful.consolidation.text import REGISTRY_ID, normalise, sentences

_I = re.IGNORECASE
_OPEN = r"^(?:please\s+)?"
_WHO = r"\b(?:you|we|agents?|the agent|everyone|everybody)\s+"
CONSTRAINT_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("must", re.compile(r"\b(?:must|mustn't|shall)\b(?!\s+(?:say|admit|confess))", _I)),
    ("imperative", re.compile(rf"{_OPEN}(?:never|do not|don't|always)\b", _I)),
    ("imperative", re.compile(rf"{_WHO}(?:never|do not|don't|always)\b", _I)),
    ("only-may", re.compile(r"\bonly\b[^.;]{0,80}?\b(?:may|can|(?:is|are) allowed to)\b", _I)),
    ("only-may", re.compile(r"\bno one (?:may|can)\b", _I)),
    ("permission", re.compile(r"\b(?:is|are)\s+(?:not\s+)?(?:allowed|permitted)\b", _I)),
    ("permission", re.compile(r"\b(?:forbidden|prohibited)\b", _I)),
    (
        "requirement",
        re.compile(
            r"\b(?:requires?|needs?)\b[^.;]{0,60}?\b(?:approvals?|reviews?|sign-?off)\b", _I
        ),
    ),
)
DECISION_RULE = re.compile(
    r"\b(?:approved|rejected|decided|agreed|accepted|declined|signed off)\b", _I
)
_DECISION_LABEL = re.compile(r"^(?:decision|decided)\s*:", _I)
_NEGATED_DECISION = re.compile(
    r"\b(?:not|n't|never|no)\b(?:\s+\w+){0,2}\s+(?:approved|rejected|decided|agreed|accepted"
    r"|declined|signed off)\b",
    _I,
)
_OPENING_ID = re.compile(rf"^\[?({REGISTRY_ID.pattern})\]?\s*[:\-–]?\s+")
_REVOKE_BEFORE = re.compile(
    rf"\b(?:supersedes?|replaces?|revokes?|lifts?|cancels?|overrides?|withdraws?)\s+"
    rf"(?:constraint\s+|decision\s+|rule\s+)?({REGISTRY_ID.pattern})",
    _I,
)
_REVOKE_AFTER = re.compile(
    rf"({REGISTRY_ID.pattern})\s+(?:no longer applies|is\s+(?:now\s+)?(?:revoked|lifted|void"
    rf"|withdrawn|cancell?ed))",
    _I,
)
_UNTIL = re.compile(r"\buntil\s+(\d{4}-\d{2}-\d{2})\b", _I)
_FOR = re.compile(r"\bfor\s+(?:the\s+next\s+)?(\d+)\s+(hour|day|week)s?\b", _I)
_UNIT = {"hour": timedelta(hours=1), "day": timedelta(days=1), "week": timedelta(weeks=1)}
_TAGS = (
    ("merge", re.compile(r"\b(?:merge[sd]?|pull requests?|PRs?|main branch|reviews?)\b", _I)),
    (
        "permission",
        re.compile(r"\b(?:may|allowed|permitted|access|forbidden|prohibited|credentials)\b", _I),
    ),
    ("scope", re.compile(r"\b(?:only|scope|limit(?:ed)?|within|outside|never touch)\b", _I)),
)

Kind = Literal["constraint", "decision"]


class Promotion(BaseModel):
    """A sentence lifted into the load-bearing registry."""

    model_config = ConfigDict(frozen=True)

    decision_id: str
    kind: Kind
    text: str
    source_event: int
    expires_at: datetime | None = None
    rule: str
    tags: tuple[str, ...] = ()


class Revocation(BaseModel):
    """A sentence retiring an earlier registry entry."""

    model_config = ConfigDict(frozen=True)

    decision_id: str
    by: str
    source_event: int


def classify(sentence: str, *, from_user: bool) -> tuple[Kind, str] | None:
    """``(kind, rule)`` for a load-bearing sentence, else None."""
    s = _OPENING_ID.sub("", normalise(sentence).strip())  # "C-3: Do not ..." is imperative
    if not s or s.endswith("?"):
        return None
    if _DECISION_LABEL.match(s):
        return "decision", "decision-label"
    if not from_user:
        return None
    for name, pattern in CONSTRAINT_RULES:
        if pattern.search(s):
            return "constraint", name
    if DECISION_RULE.search(s) and not _NEGATED_DECISION.search(s):
        return "decision", "decision-verb"
    return None


def expiry(sentence: str, at: datetime, default: timedelta | None) -> datetime | None:
    until = _UNTIL.search(sentence)
    if until:
        day = datetime.fromisoformat(until.group(1)).replace(tzinfo=UTC)
        return day + timedelta(days=1)
    span = _FOR.search(sentence)
    if span:
        return at + int(span.group(1)) * _UNIT[span.group(2).lower()]
    return None if default is None else at + default


def promotions(
    items: list[SpanItem], policy: ConsolidationPolicy
) -> tuple[list[Promotion], list[Revocation]]:
    """Everything in ``items`` the registry must hold before they are rewritten."""
    promoted: list[Promotion] = []
    revoked: list[Revocation] = []
    for item in items:
        if item.kind != "turn":
            continue
        count = 0
        for sentence in sentences(item.text):
            targets = [m.group(1) for m in _REVOKE_BEFORE.finditer(sentence)]
            targets += [m.group(1) for m in _REVOKE_AFTER.finditer(sentence)]
            found = classify(sentence, from_user=item.from_user)
            own: str | None = None
            if found is not None:
                kind, rule = found
                count += 1
                opening = _OPENING_ID.match(sentence)
                if opening and opening.group(1) not in targets:
                    own = opening.group(1)
                else:
                    prefix = "LB" if kind == "constraint" else "DEC"
                    own = f"{prefix}-{item.id}" + (f"-{count}" if count > 1 else "")
                ttl = policy.constraint_ttl if kind == "constraint" else policy.decision_ttl
                promoted.append(
                    Promotion(
                        decision_id=own,
                        kind=kind,
                        text=sentence,
                        source_event=item.id,
                        expires_at=expiry(sentence, item.at, ttl),
                        rule=rule,
                        tags=tuple(tag for tag, p in _TAGS if p.search(sentence)),
                    )
                )
            if item.from_user or found is not None:
                for target in dict.fromkeys(targets):
                    by = own or f"revoked@events:{item.id}"
                    revoked.append(Revocation(decision_id=target, by=by, source_event=item.id))
    return promoted, revoked
