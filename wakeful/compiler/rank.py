"""Pass 6 — rank: recency × importance × relevance, weights from the policy.

Scores live in log2 space: ``w_r·log2(recency) + w_i·log2(importance+floor) +
w_v·log2(relevance+floor)`` with ``recency = 2^(-(max_seq - seq)/half_life)``. The static
part (everything but ``max_seq``) is precomputed per block (:func:`static_rank_key`); since
``max_seq`` is a constant within a compile, ranking by the static key is ranking by score,
and the ledger shows the static key.
A tool pair ranks as its better half. Ties break on ``seq`` (newer first) then ``id``.

The budget pass takes candidates in :func:`keep_order`: eviction class first (stale,
then collapsed tool output, then optional examples go before anything else), then score.
"""

from __future__ import annotations

from wakeful.compiler.work import Exclusion, Work, static_rank_key

__all__ = ["keep_order", "rank", "static_rank_key"]


def rank(work: Work) -> None:
    facts = work.facts
    for head, other in work.partner.items():
        if facts[head].kind_s == "tool_call":
            work.pair_key[head] = max(facts[head].key, facts[other].key)
    floors = work.policy.eviction.min_relevance
    if floors:
        for idx in work.pool:
            block = facts[idx].block
            floor = floors.get(block.kind)
            if floor is not None and block.relevance < floor and idx not in work.excluded:
                work.exclude(
                    idx,
                    Exclusion(
                        "below_min_relevance",
                        f"eviction.min_relevance.{block.kind.value}",
                        f"{block.relevance:g} < {floor:g}",
                    ),
                )


def keep_order(work: Work, idx: int) -> tuple[int, float, int, str, int]:
    """Sort key, smallest kept first: higher class, higher score, newer seq, then id."""
    f = work.facts[idx]
    klass = work.class_override.get(idx, f.klass)
    return (-klass, -work.pair_key.get(idx, f.key), -f.seq, f.id, idx)
