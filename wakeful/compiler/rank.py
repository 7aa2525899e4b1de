"""Pass 6 — rank: recency × importance × relevance, weights from the policy.

Scores live in log2 space: ``w_r·log2(recency) + w_i·log2(importance+floor) +
w_v·log2(relevance+floor)`` with ``recency = 2^(-(max_seq - seq)/half_life)``. The static
part (everything but ``max_seq``) is precomputed per block (:func:`static_rank_key`); since
``max_seq`` is a constant within a compile, ranking by the static key is ranking by score,
and the ledger shows the static key.
A tool pair ranks as its better half. Ties break on ``seq`` (newer first) then ``id``.

The budget takes candidates in :func:`keep_order`: eviction class first (stale,
then collapsed tool output, then optional examples go before anything else), then score.
Each candidate's entry in that order is kept by the partition (:func:`unit_entry`), in a
stream per segment and class (``streams.py``).
"""

from __future__ import annotations

from wakeful.compiler.facts import Exclusion, Facts, static_rank_key
from wakeful.compiler.state import Partition
from wakeful.compiler.streams import Entry
from wakeful.compiler.work import Work

__all__ = ["keep_order", "min_relevance", "static_rank_key", "unit_entry"]


def unit_entry(part: Partition, head: Facts, other: Facts | None, serial: int) -> Entry:
    """The keep-order entry of a candidate unit (``serial`` tells entries of one unit apart)."""
    key = head.key
    if other is not None and head.is_call:
        key = part.pair_key[head] = max(head.key, other.key)
    else:
        part.pair_key.pop(head, None)
    klass = part.klass(head)
    return (-klass, -key, -head.seq, head.id, part.tb[head], serial, head, part.cost(head))


def below_floor(part: Partition, f: Facts) -> bool:
    floor = part.eviction.min_relevance.get(f.block.kind)
    return floor is not None and f.block.relevance < floor


def min_relevance(work: Work) -> None:
    """Exclude candidates below their kind's relevance floor (``eviction.min_relevance``)."""
    floors = work.policy.eviction.min_relevance
    for f in work.part.minrel:
        if work.is_excluded(f):
            continue
        kind = f.block.kind
        relevance = f.block.relevance
        if relevance == 0:
            # 0.0 and -0.0 share facts but not their spelling: read the snapshot's block.
            relevance = work.current_block(f).relevance
        work.exclude(
            f,
            Exclusion(
                "below_min_relevance",
                f"eviction.min_relevance.{kind.value}",
                f"{relevance:g} < {floors[kind]:g}",
            ),
        )


def keep_order(work: Work, f: Facts) -> tuple[int, float, int, str, int]:
    """Sort key, smallest kept first: higher class, higher score, newer seq, then id."""
    part = work.part
    return (-work.klass(f), -part.pair_key.get(f, f.key), -f.seq, f.id, part.tb[f])
