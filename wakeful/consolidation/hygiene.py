"""Memory hygiene: supersession deltas, staleness, decay, and marking superseded values.

* **Supersession** happens when a memory is written (a newer memory on the same key retires
  the older one, both kept with validity intervals). Here it becomes visible: a value that
  changed is shown to the model as a structured :class:`Delta` for ``delta_window``, and
  summaries written before the change get their stale sentences marked ``[superseded: …]``
  so an old summary never presents a replaced value as current.
* **Staleness**: a memory older than ``memory_sla`` is re-verified from a *fresh tool result*
  (one newer than the memory stating the same subject): the same value confirms it, a new
  value supersedes it. Without fresh evidence it is marked ``stale`` for re-verification.
* **Decay**: a memory below ``decay_below_importance`` loses half its weight every
  ``decay_half_life`` it goes unused (not in any recent window); under ``decay_floor`` it is
  retired — its row stays, with the end of its validity interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from wakeful.consolidation.facts import Fact, fact_key, parse_fact
from wakeful.consolidation.policy import ConsolidationPolicy
from wakeful.consolidation.probes import SUBJECT_SHARE
from wakeful.consolidation.text import contains_token, content_words, overlap, sentences

DELTA_PREFIX = "delta:"
SUPERSEDED_MARK = "[superseded:"


class MemoryView(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: int
    key: str
    text: str
    source: str
    verification: str = "unverified"
    importance: float = 0.5
    captured_at: datetime
    supersedes: int | None = None
    invalidated_at: datetime | None = None

    @property
    def live(self) -> bool:
        return self.invalidated_at is None

    @property
    def is_delta(self) -> bool:
        return self.key.startswith(DELTA_PREFIX)


class Delta(BaseModel):
    """A structured change the model should know about."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["changed", "conflict"]
    key: str
    subject: str
    old: str
    new: str
    at: datetime
    old_source: str
    new_source: str

    def render(self) -> str:
        if self.kind == "changed":
            return (
                f"Δ changed {self.subject}: {self.old} → {self.new} since {self.at:%Y-%m-%d}"
                f" ({self.old} is superseded; sources {self.old_source} → {self.new_source})"
            )
        return (
            f"Δ conflict {self.subject}: {self.old_source} says {self.old!r} but "
            f"{self.new_source} says {self.new!r}; verify before relying on either"
        )


class SupersededFact(BaseModel):
    model_config = ConfigDict(frozen=True)

    key: str
    subject: str
    old: str
    new: str
    at: datetime


def memory_fact(m: MemoryView) -> tuple[str, str] | None:
    """The ``(subject, value)`` a memory states, when its text is a fact statement."""
    for s in sentences(m.text):
        parsed = parse_fact(s)
        if parsed is not None:
            return parsed
    return None


def superseded_facts(history: list[MemoryView]) -> list[SupersededFact]:
    """Values replaced on their key: every dead value that differs from the live one."""
    live = {m.key: m for m in history if m.live and not m.is_delta}
    by_id = {m.id: m for m in history}
    out = []
    for key, current in sorted(live.items()):
        now_fact = memory_fact(current)
        if now_fact is None:
            continue
        seen = set()
        prior = by_id.get(current.supersedes or -1)
        while prior is not None and prior.id not in seen and prior.key == key:
            seen.add(prior.id)
            old = memory_fact(prior)
            if old is not None and old[1] != now_fact[1]:
                out.append(
                    SupersededFact(
                        key=key,
                        subject=now_fact[0],
                        old=old[1],
                        new=now_fact[1],
                        at=current.captured_at,
                    )
                )
            prior = by_id.get(prior.supersedes or -1)
    return out


def deltas(history: list[MemoryView], now: datetime, policy: ConsolidationPolicy) -> list[Delta]:
    """The latest change of each key still inside ``delta_window``."""
    by_id = {m.id: m for m in history}
    out = []
    for m in sorted((m for m in history if m.live and not m.is_delta), key=lambda m: m.key):
        prior = by_id.get(m.supersedes or -1)
        if prior is None or now - m.captured_at > policy.delta_window:
            continue
        new, old = memory_fact(m), memory_fact(prior)
        if new is None or old is None or new[1] == old[1]:
            continue
        out.append(
            Delta(
                kind="changed",
                key=m.key,
                subject=new[0],
                old=old[1],
                new=new[1],
                at=m.captured_at,
                old_source=f"memory:{prior.id}",
                new_source=f"memory:{m.id}",
            )
        )
    return out


def expired_deltas(
    memories: list[MemoryView], now: datetime, policy: ConsolidationPolicy
) -> list[int]:
    return [
        m.id
        for m in memories
        if m.live and m.is_delta and now - m.captured_at > policy.delta_window
    ]


def annotate(
    text: str, superseded: list[SupersededFact], revoked: Sequence[tuple[str, str]] = ()
) -> str | None:
    """``text`` with each line stating a superseded value, or citing a revoked registry
    entry (``(id, successor)`` pairs), marked; None if nothing changed."""
    changed = False
    lines = []
    for line in text.split("\n"):
        if SUPERSEDED_MARK in line or "superseded by" in line:
            lines.append(line)
            continue
        marks = []
        words = content_words(line)
        for fact in superseded:
            subject = content_words(fact.subject)
            if contains_token(line, fact.old) and overlap(subject, words) >= SUBJECT_SHARE:
                marks.append(f"{SUPERSEDED_MARK} {fact.subject} is now {fact.new}]")
        for rid, by in revoked:
            if contains_token(line, rid) and not contains_token(line, by):  # not the successor
                marks.append(f"{SUPERSEDED_MARK} {rid} was replaced by {by}]")
        if marks:
            changed = True
            line = line.rstrip() + " " + " ".join(dict.fromkeys(marks))
        lines.append(line)
    return "\n".join(lines) if changed else None


def stale(
    memories: list[MemoryView], now: datetime, policy: ConsolidationPolicy
) -> list[MemoryView]:
    """Live memories past the SLA (those already marked ``stale`` too: fresh evidence may
    have arrived since)."""
    return [
        m for m in memories if m.live and not m.is_delta and now - m.captured_at > policy.memory_sla
    ]


class Verdict(BaseModel):
    model_config = ConfigDict(frozen=True)

    outcome: Literal["confirmed", "changed", "unknown"]
    evidence: Fact | None = None


def reverify(memory: MemoryView, fresh: list[Fact]) -> Verdict:
    """Judge a memory by the newest fresh fact on its subject (tool results, repo reads)."""
    stated = memory_fact(memory)
    if stated is None:
        return Verdict(outcome="unknown")
    key = fact_key(stated[0])
    newer = [f for f in fresh if f.key == key and f.at > memory.captured_at]
    if not newer:
        return Verdict(outcome="unknown")
    latest = max(newer, key=lambda f: (f.at, f.source_event))
    outcome: Literal["confirmed", "changed"] = (
        "confirmed" if latest.value == stated[1] else "changed"
    )
    return Verdict(outcome=outcome, evidence=latest)


def decay(
    memories: list[MemoryView],
    last_used: dict[int, datetime],
    now: datetime,
    policy: ConsolidationPolicy,
) -> list[tuple[int, float]]:
    """``(memory id, decayed weight)`` of every memory to retire."""
    out = []
    for m in memories:
        if not m.live or m.is_delta or m.importance >= policy.decay_below_importance:
            continue
        since = max(m.captured_at, last_used.get(m.id, m.captured_at))
        weight = m.importance * 0.5 ** ((now - since) / policy.decay_half_life)
        if weight < policy.decay_floor:
            out.append((m.id, round(weight, 4)))
    return out
