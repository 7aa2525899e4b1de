"""Dreaming-style merge: near-duplicate memories from different sessions become one.

Two live memories are near duplicates when the Jaccard similarity of their content words
reaches ``merge_similarity``. Groups are closed transitively and merged into the most
important (then newest) member's key: its text first, then every sentence of the others that
adds something, with the provenance of every member in ``source``. Members whose numbers
differ are *not* merged — that is a conflict, surfaced as a delta instead.

Every rewrite is checked for loss: a prior entry is *kept* when at least ``KEEP_SHARE`` of its
content words survive in the rewrite, and a rewrite that drops more than
``max_rewrite_loss`` of its prior entries is rejected, whoever proposed it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from wakeful.consolidation.hygiene import Delta, MemoryView, memory_fact
from wakeful.consolidation.policy import ConsolidationPolicy
from wakeful.consolidation.text import content_words, jaccard, numerals, overlap, sentences

KEEP_SHARE = 0.8


class MergeProposal(BaseModel):
    model_config = ConfigDict(frozen=True)

    key: str
    member_ids: tuple[int, ...]
    text: str
    source: str
    importance: float
    loss: float
    accepted: bool


def rewrite_loss(prior: list[str], rewrite: str) -> float:
    """Share of ``prior`` entries the rewrite does not keep."""
    if not prior:
        return 0.0
    kept = content_words(rewrite)
    lost = sum(1 for p in prior if overlap(content_words(p), kept) < KEEP_SHARE)
    return lost / len(prior)


def _find(parent: dict[int, int], i: int) -> int:
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


def duplicate_groups(
    memories: list[MemoryView], policy: ConsolidationPolicy
) -> tuple[list[list[MemoryView]], list[Delta]]:
    """Groups of near duplicates to merge, and conflicting pairs to surface."""
    live = sorted((m for m in memories if m.live and not m.is_delta), key=lambda m: m.id)
    words = {m.id: content_words(m.text) for m in live}
    nums = {m.id: numerals(m.text) for m in live}
    parent = {m.id: m.id for m in live}
    conflicts = []
    for i, a in enumerate(live):
        for b in live[i + 1 :]:
            if a.key == b.key or jaccard(words[a.id], words[b.id]) < policy.merge_similarity:
                continue
            if nums[a.id] != nums[b.id]:
                fa, fb = memory_fact(a), memory_fact(b)
                conflicts.append(
                    Delta(
                        kind="conflict",
                        key=f"{a.key}|{b.key}",
                        subject=(fb or fa or (a.key, ""))[0],
                        old=fa[1] if fa else a.text,
                        new=fb[1] if fb else b.text,
                        at=max(a.captured_at, b.captured_at),
                        old_source=f"memory:{a.id}",
                        new_source=f"memory:{b.id}",
                    )
                )
                continue
            parent[_find(parent, b.id)] = _find(parent, a.id)
    groups: dict[int, list[MemoryView]] = {}
    for m in live:
        groups.setdefault(_find(parent, m.id), []).append(m)
    return [g for _, g in sorted(groups.items()) if len(g) > 1], conflicts


def merge(group: list[MemoryView], policy: ConsolidationPolicy) -> MergeProposal:
    """One memory for ``group``, with the provenance of every member."""
    base = max(group, key=lambda m: (m.importance, m.captured_at, m.id))
    text = base.text.strip()
    for m in sorted(group, key=lambda m: m.id):
        if m.id == base.id:
            continue
        for s in sentences(m.text):
            if overlap(content_words(s), content_words(text)) < KEEP_SHARE:
                text = f"{text} {s}"
    loss = rewrite_loss([m.text for m in group], text)
    members = sorted(group, key=lambda m: m.id)
    return MergeProposal(
        key=base.key,
        member_ids=tuple(m.id for m in members),
        text=text,
        source="merge:" + "+".join(f"memory:{m.id}<{m.source}>" for m in members),
        importance=max(m.importance for m in group),
        loss=loss,
        accepted=loss <= policy.max_rewrite_loss,
    )


def check_rewrite(
    prior: list[str], rewrite: str, policy: ConsolidationPolicy
) -> tuple[bool, float]:
    """``(accepted, loss)`` of any rewrite of ``prior`` entries (a model's, too)."""
    loss = rewrite_loss(prior, rewrite)
    return loss <= policy.max_rewrite_loss, loss
