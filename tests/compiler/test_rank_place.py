from __future__ import annotations

from wakeful.compiler import BlockKind, Ranking
from wakeful.compiler.place import edges_first
from wakeful.compiler.work import static_rank_key

from .factory import base_blocks, block, snapshot
from .helpers import compile_


def test_score_rises_with_recency_importance_and_relevance() -> None:
    r = Ranking()
    base = block("b", BlockKind.MEMORY, seq=10, importance=0.5, relevance=0.5)
    key = static_rank_key(base, r)
    for change in ({"seq": 11}, {"importance": 0.9}, {"relevance": 0.9}):
        assert static_rank_key(base.model_copy(update=change), r) > key
    # weights are exponents: zero weight makes the factor irrelevant
    flat = Ranking(relevance_weight=0.0)
    assert static_rank_key(base.model_copy(update={"relevance": 0.9}), flat) == static_rank_key(
        base, flat
    )
    # one half-life of events halves recency: -1 in log2 space
    older = base.model_copy(update={"seq": 10 - int(r.half_life_events)})
    assert abs(static_rank_key(older, r) - (key - 1.0)) < 1e-9


def test_edges_first_puts_the_weakest_in_the_middle() -> None:
    assert edges_first([1, 2, 3, 4, 5]) == [1, 3, 5, 4, 2]
    assert edges_first([]) == []


def test_segments_are_placed_stable_first() -> None:
    w = compile_(snapshot())
    order = ["stable", "semi_stable", "summaries", "recent", "ask", "evidence"]
    segments = [r.segment for r in w.ledger.included()]
    assert segments == sorted(segments, key=order.index)
    assert set(segments) == set(order)


def test_evidence_is_ordered_edges_first_with_ties_on_seq_and_id() -> None:
    extra = [
        block(f"ev-{n}", BlockKind.RETRIEVED, f"chunk {n}", seq=50, relevance=rel)
        for n, rel in enumerate([0.1, 0.9, 0.5, 0.7, 0.3])
    ]
    twins = [
        block(f"tw-{c}", BlockKind.RETRIEVED, f"twin {c}", seq=50, relevance=0.0) for c in "ba"
    ]
    w = compile_(snapshot([*base_blocks()[:7], *extra, *twins, base_blocks()[-1]]))
    evidence = [r.block_id for r in w.ledger.included() if r.segment == "evidence"]
    # keep order: ev-1, ev-3, ev-2, ev-4, ev-0, tw-a, tw-b (equal scores: seq, then id)
    assert evidence == ["ev-1", "ev-2", "ev-0", "tw-b", "tw-a", "ev-4", "ev-3"]
