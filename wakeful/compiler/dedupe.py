"""Pass 3 — dedupe: one copy of each content, one holder of each supersession key.

*Exact duplicates* (same text; events excluded, since two identical turns are two events)
keep the copy in the most stable segment — it is already cached there — then the
load-bearing, authoritative, freshest one. Equality of the text is what a content hash
stands for, and dict lookup on the text gives it without a collision risk. *Supersession*:
blocks sharing a ``supersession_key`` describe the same thing; the freshest authoritative
one wins (``authoritative`` first, then ``captured_at``, ``seq``, ``id``). The current wake
is never evicted, and a load-bearing block only yields to another load-bearing block. Every
skip is a ledger row naming the winner.
"""

from __future__ import annotations

from wakeful.compiler.blocks import SEGMENT_ORDER
from wakeful.compiler.work import Exclusion, Facts, Work

_SEGMENT_RANK = {seg: -n for n, seg in enumerate(SEGMENT_ORDER)}


def content_rank(f: Facts) -> tuple[int, bool, bool, float, int, str]:
    b = f.block
    return (_SEGMENT_RANK[f.segment], b.load_bearing, b.authoritative, f.ts, f.seq, f.id)


def freshness_rank(f: Facts) -> tuple[bool, bool, float, int, str]:
    b = f.block
    return (b.load_bearing, b.authoritative, f.ts, f.seq, f.id)


def dedupe(work: Work) -> None:
    facts = work.facts
    excluded = work.excluded
    first: dict[str, int] = {}
    groups: dict[str, list[int]] = {}  # only texts seen more than once
    for idx in work.lists["dedupe"]:
        if idx in excluded:
            continue
        text = facts[idx].block.text
        seen = first.setdefault(text, idx)
        if seen != idx:
            groups.setdefault(text, [seen]).append(idx)
    for members in groups.values():
        winner = max(members, key=lambda i: content_rank(facts[i]))
        for idx in members:
            if idx != winner:
                why = Exclusion("duplicate", "dedupe.content", f"duplicate of {facts[winner].id}")
                work.exclude(idx, why)

    keys: dict[str, list[int]] = {}
    for idx in work.lists["supersedes"]:
        if idx not in excluded:
            keys.setdefault(facts[idx].block.supersession_key, []).append(idx)  # type: ignore[arg-type]
    tail = set(work.tail)
    for key, members in keys.items():
        if len(members) < 2:
            continue
        winner = max(members, key=lambda i: freshness_rank(facts[i]))
        champion = facts[winner].block
        for idx in members:
            if idx == winner or idx in tail:
                continue
            if facts[idx].block.load_bearing and not champion.load_bearing:
                continue
            why = Exclusion(
                "superseded", "dedupe.supersession", f"{key}: superseded by {champion.id}"
            )
            work.exclude(idx, why)
