"""Hybrid retrieval under a token cap, on the in-memory fake and on Qdrant Edge."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.substrate.retrieval_store import Turn, embedded, filled
from wakeful.compiler.blocks import BlockKind
from wakeful.substrate.embedders import HashingEmbedder
from wakeful.substrate.retrieval import RetrievalConfig, RetrievalHit, Retriever, hop_names
from wakeful.substrate.vectors.base import FusionMode, VectorPoint, VectorStore
from wakeful.substrate.vectors.edge import EdgeVectorStore
from wakeful.substrate.vectors.memory import MemoryVectorStore

EMB = HashingEmbedder(dim=128)
MAY = datetime(2026, 5, 8, tzinfo=UTC)
JUNE = datetime(2026, 6, 20, tzinfo=UTC)
SESSIONS = {
    "s1": (
        MAY,
        [
            "Caroline: I went to the LGBTQ support group yesterday.",
            "Melanie: That is wonderful! How did it feel?",
            "Caroline: It felt so empowering, everyone was kind.",
            "Melanie: I painted a sunrise over the lake last week.",
            "Caroline: I would love to see that painting.",
            "Melanie: We went hiking with friends.",
        ],
    ),
    "s2": (
        JUNE,
        [
            "Melanie: We went camping in the mountains.",
            "Caroline: Did the kids enjoy the trip?",
            "Melanie: They loved roasting marshmallows.",
            "Caroline: We went hiking with family.",
        ],
    ),
}


def words(text: str) -> int:
    return len(text.split())


def chunks(tenant: str = "t1", marker: str = "") -> list[VectorPoint]:
    turns = [
        Turn(
            chunk_id=f"D{n}:{seq + 1}",
            text=marker + text,
            seq=seq,
            session_id=session,
            session_date=date,
            external_id=f"D{n}:{seq + 1}",
        )
        for n, (session, (date, texts)) in enumerate(SESSIONS.items(), start=1)
        for seq, text in enumerate(texts)
    ]
    return embedded(EMB, turns, tenant=tenant)


@pytest.fixture(params=["memory", "edge"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorStore]:
    s: VectorStore = MemoryVectorStore() if request.param == "memory" else EdgeVectorStore(tmp_path)
    filled(s, EMB, "chunks", chunks())
    yield s
    s.close()


def retrieve(
    store: VectorStore, query: str, cap: int = 1000, **config: object
) -> list[RetrievalHit]:
    retriever = Retriever(store, EMB, RetrievalConfig.model_validate(config))
    return retriever.retrieve(query, tenant="t1", agent="a1", token_cap=cap, count_tokens=words)


def test_hits_carry_session_date_seq_and_external_id(store: VectorStore) -> None:
    first = retrieve(store, "LGBTQ support group")[0]
    assert (first.external_id, first.session_id, first.seq) == ("D1:1", "s1", 0)
    assert first.session_date == MAY
    assert (first.rank, first.relevance) == (1, 1.0)


def test_neighbours_follow_their_hit_when_they_fit(store: VectorStore) -> None:
    hits = retrieve(store, "sunrise over the lake", neighbour_lag=0)
    assert [h.external_id for h in hits[:3]] == ["D1:4", "D1:3", "D1:5"]
    assert [h.neighbour_of for h in hits[:3]] == [None, "D1:4", "D1:4"]
    assert all(h.relevance < 1.0 for h in hits[1:])


# Without smoothing, neighbours are never candidates of their own: packing alone places them.
PLAIN = {"mode": FusionMode.SPARSE, "dense_fallback": False, "smoothing": 0.0}


def test_neighbours_wait_until_lag_more_hits_are_packed(store: VectorStore) -> None:
    # Hits, best first: D1:6 (hiking, friends), D2:1 (camping), D2:4 (hiking); none asks.
    hits = retrieve(store, "hiking friends camping", neighbour_lag=1, **PLAIN)
    assert [(h.external_id, h.neighbour_of) for h in hits] == [
        ("D1:6", None),
        ("D2:1", None),
        ("D1:5", "D1:6"),  # due one hit after D1:6
        ("D2:4", None),
        ("D2:2", "D2:1"),
        ("D2:3", "D2:4"),  # no hit left to wait for
    ]
    lagless = retrieve(store, "hiking friends camping", neighbour_lag=0, **PLAIN)
    assert [(h.external_id, h.neighbour_of) for h in lagless][:3] == [
        ("D1:6", None),
        ("D1:5", "D1:6"),
        ("D2:1", None),
    ]


def test_the_reply_to_a_question_comes_at_once(store: VectorStore) -> None:
    hits = retrieve(store, "kids enjoy trip sunrise", neighbour_lag=5, **PLAIN)
    # D2:2 asks: the turn after it (its answer) joins at once; the turn before it waits.
    assert [(h.external_id, h.neighbour_of) for h in hits] == [
        ("D2:2", None),
        ("D2:3", "D2:2"),
        ("D1:4", None),
        ("D2:1", "D2:2"),
        ("D1:3", "D1:4"),
        ("D1:5", "D1:4"),
    ]


def test_lagged_neighbours_still_fill_the_cap_when_hits_run_out(store: VectorStore) -> None:
    hits = retrieve(store, "sunrise", neighbour_lag=50, **PLAIN)
    assert [(h.external_id, h.neighbour_of) for h in hits] == [
        ("D1:4", None),
        ("D1:3", "D1:4"),
        ("D1:5", "D1:4"),
    ]


def test_neighbours_are_left_out_when_they_do_not_fit(store: VectorStore) -> None:
    hit = "Melanie: I painted a sunrise over the lake last week."
    hits = retrieve(store, "sunrise over the lake", cap=words(hit) + 3)
    assert [h.external_id for h in hits] == ["D1:4"]


def test_neighbours_never_cross_sessions(store: VectorStore) -> None:
    hits = retrieve(store, "hiking with friends")
    by_id = {h.chunk_id: h for h in hits}
    assert by_id["D1:6"].rank == 1
    for h in hits:
        if h.neighbour_of is not None and h.neighbour_of in by_id:
            assert h.session_id == by_id[h.neighbour_of].session_id


@pytest.mark.parametrize("cap", [4, 9, 20, 45, 1000])
def test_token_cap_is_never_exceeded(store: VectorStore, cap: int) -> None:
    hits = retrieve(store, "Caroline Melanie painting camping hiking group", cap=cap)
    assert sum(h.tokens for h in hits) <= cap
    assert all(h.tokens == words(h.text) for h in hits)
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))


def test_duplicates_by_source_hash_are_dropped(store: VectorStore) -> None:
    copy = chunks()[3].model_copy(update={"chunk_id": "copy", "seq": 40, "session_id": "s9"})
    store.upsert([copy])
    texts = [h.text for h in retrieve(store, "sunrise over the lake")]
    assert texts.count(copy.text) == 1


def test_another_tenants_chunks_never_come_back(store: VectorStore) -> None:
    store.upsert(chunks(tenant="t2", marker="secret "))
    hits = retrieve(store, "secret support group sunrise camping", cap=10_000)
    assert hits and not any("secret" in h.text for h in hits)


@pytest.mark.parametrize(("month", "expected"), [("June", "D2:4"), ("May", "D1:6")])
def test_session_date_breaks_the_tie_for_temporal_questions(
    store: VectorStore, month: str, expected: str
) -> None:
    hits = retrieve(store, f"Who went hiking in {month}?", neighbours=False)
    assert hits[0].external_id == expected


def test_smoothing_brings_in_the_answer_after_the_matching_turn(store: VectorStore) -> None:
    bm25 = {"mode": FusionMode.SPARSE, "dense_fallback": False}
    smooth = Retriever(store, EMB, RetrievalConfig(**bm25))
    plain = Retriever(store, EMB, RetrievalConfig(**bm25, smoothing=0.0))
    question = "Did the kids enjoy the trip?"
    assert "D2:3" in [c.hit.chunk_id for c in smooth.candidates(question, tenant="t1", agent="a1")]
    assert "D2:3" not in [
        c.hit.chunk_id for c in plain.candidates(question, tenant="t1", agent="a1")
    ]


@pytest.mark.parametrize("mode", list(FusionMode))
def test_every_mode_finds_the_obvious_turn(store: VectorStore, mode: FusionMode) -> None:
    assert retrieve(store, "camping in the mountains", mode=mode)[0].external_id == "D2:1"


def test_no_match_returns_nothing(store: VectorStore) -> None:
    hits = retrieve(store, "quantum chromodynamics", mode=FusionMode.SPARSE, dense_fallback=False)
    assert hits == []


def test_hits_become_retrieved_blocks(store: VectorStore) -> None:
    hits = retrieve(store, "sunrise over the lake", neighbour_lag=0)
    block = hits[0].to_block()
    assert block.kind is BlockKind.RETRIEVED
    assert (block.id, block.source) == ("retrieved:D1:4", "chunk:D1:4")
    assert (block.relevance, block.captured_at, block.external_id) == (1.0, MAY, "D1:4")
    assert (block.session_id, block.seq, block.text) == ("s1", 3, hits[0].text)
    neighbour = hits[1].to_block()
    assert 0 < neighbour.relevance < 1
    assert neighbour.meta["neighbour_of"] == "D1:4"


def _tie_store(texts: list[tuple[str, datetime]]) -> MemoryVectorStore:
    turns = [
        Turn(
            chunk_id=f"c{n}",
            text=text,
            seq=0,
            session_id=f"s{n}",
            session_date=date,
            external_id=f"c{n}",
        )
        for n, (text, date) in enumerate(texts)
    ]
    return filled(MemoryVectorStore(), EMB, "chunks", embedded(EMB, turns))


@pytest.mark.parametrize(
    ("question", "first"),
    [
        ("When did Ana bake bread?", "c1"),  # asks when: the turn that says when wins
        ("What year did Ana bake bread?", "c1"),
        ("What bread did Ana bake?", "c0"),  # does not ask when: rank order holds
    ],
)
def test_a_when_question_prefers_turns_that_say_when(question: str, first: str) -> None:
    store = _tie_store(
        [
            ("Ana: I bake bread with rye.", MAY),
            ("Ana: I bake bread last Sunday.", MAY),
        ]
    )
    config = {**PLAIN, "neighbours": False}
    hits = retrieve(store, question, **config)
    assert hits[0].external_id == first
    flat = retrieve(store, question, when_boost=0.0, **config)
    assert flat[0].external_id == "c0"


def test_may_the_verb_is_not_a_time() -> None:
    store = _tie_store(
        [
            ("Ana: I bake bread with rye.", MAY),
            ("Ana: I may bake bread again.", MAY),
        ]
    )
    hits = retrieve(store, "When did Ana bake bread?", **PLAIN, neighbours=False)
    assert hits[0].external_id == "c0"


def test_neighbour_reach_brings_two_turns_either_side(store: VectorStore) -> None:
    hits = retrieve(store, "sunrise", neighbour_lag=50, neighbour_reach=2, **PLAIN)
    assert [(h.external_id, h.neighbour_of) for h in hits] == [
        ("D1:4", None),
        ("D1:3", "D1:4"),
        ("D1:5", "D1:4"),
        ("D1:2", "D1:4"),
        ("D1:6", "D1:4"),
    ]
    # Each step away is worth neighbour_relevance again.
    assert hits[3].score == pytest.approx(hits[0].score * 0.25)


def test_only_strong_hits_bring_their_neighbours(store: VectorStore) -> None:
    question = "hiking friends camping"
    every = retrieve(store, question, neighbour_lag=0, **PLAIN)
    strong = retrieve(store, question, neighbour_lag=0, neighbour_floor=0.99, **PLAIN)
    assert {h.neighbour_of for h in every} == {None, "D1:6", "D2:1", "D2:4"}
    assert {h.neighbour_of for h in strong} == {None, "D1:6"}


@pytest.mark.parametrize(("near", "first"), [(0.0, "c0"), (0.5, "c1")])
def test_a_month_next_to_the_named_one_gains_a_share_of_the_boost(near: float, first: str) -> None:
    store = _tie_store(
        [
            ("Ana: I bake bread with rye.", MAY),
            ("Ana: I bake bread with rye!", JUNE),
        ]
    )
    hits = retrieve(store, "Who baked bread in July?", date_near=near, **PLAIN, neighbours=False)
    assert hits[0].external_id == first


def test_hop_names_are_capitalised_words_inside_sentences_not_asked() -> None:
    texts = [
        "Ana: My friend Boris came by. The cake was from Paris, said Boris.",
        "Boris: I'm Boris's cousin, Ana and I met Clara's dog in Paris.",
    ]
    assert hop_names(texts, "What did Ana's friend bring?", 5) == ["Boris", "Paris", "Clara"]
    assert hop_names(texts, "Did Boris bring it?", 1) == ["Paris"]


def test_a_second_hop_finds_what_the_first_hits_name() -> None:
    turns = [
        Turn("c0", "Ana: My friend Boris visits today.", 0, "s0", MAY, "c0"),
        Turn("c1", "Boris: I baked a plum cake.", 0, "s1", MAY, "c1"),
        Turn("c2", "Clara: Nothing to add.", 0, "s2", MAY, "c2"),
    ]
    store = filled(MemoryVectorStore(), EMB, "chunks", embedded(EMB, turns))
    question = "What did the friend of Ana do?"

    def found(**config: object) -> list[str]:
        retriever = Retriever(store, EMB, RetrievalConfig.model_validate({**PLAIN, **config}))
        return [c.hit.chunk_id for c in retriever.candidates(question, tenant="t1", agent="a1")]

    assert found() == ["c0"]
    assert found(hop_weight=0.5) == ["c0", "c1"]


@pytest.mark.parametrize(("durations", "first"), [(False, "c0"), (True, "c1")])
def test_how_long_questions_prefer_spans_of_time_when_asked_to(durations: bool, first: str) -> None:
    store = _tie_store(
        [
            ("Ana: I bake bread with rye.", MAY),
            ("Ana: I bake bread for four years.", MAY),
        ]
    )
    config = {**PLAIN, "neighbours": False, "when_durations": durations}
    hits = retrieve(store, "How long has Ana baked bread?", **config)
    assert hits[0].external_id == first


def test_how_long_counts_as_asking_when_by_default() -> None:
    store = _tie_store(
        [
            ("Ana: I bake bread with rye.", MAY),
            ("Ana: I bake bread since 2019.", MAY),
        ]
    )
    hits = retrieve(store, "How long has Ana baked bread?", **PLAIN, neighbours=False)
    assert hits[0].external_id == "c1"
