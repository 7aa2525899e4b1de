"""The session shapes built from LoCoMo have the structure the cache bench promises."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from benchmarks.cache_locomo import SPLITS, Conversation, load_split, parse_conversation
from benchmarks.cache_session import AgentSession, generate_session
from benchmarks.cache_shapes import SESSION_IDLE_S, SHAPES, Shape, build_shape, build_shapes
from wakeful.errors import UserError
from wakeful.testing.simulator.tokens import count_tokens

DATASET = Path(__file__).resolve().parents[2] / ".." / "shared" / "bench" / "locomo-dev.json"
LOCOMO = [s for s in SHAPES if s != "synthetic"]
pytestmark = pytest.mark.skipif(
    not DATASET.is_file(),
    reason=f"no LoCoMo file at {DATASET} (benchmark data, kept outside the repository)",
)


@pytest.fixture(scope="module")
def holdout() -> tuple[Conversation, ...]:
    return load_split(DATASET, "holdout")


@pytest.fixture(scope="module")
def dev() -> tuple[Conversation, ...]:
    return load_split(DATASET, "dev")


@pytest.fixture(scope="module")
def shapes(holdout: tuple[Conversation, ...]) -> dict[str, Shape]:
    return build_shapes(holdout, 11)


def _gaps(session: AgentSession) -> list[tuple[float, int, int]]:
    """(idle seconds, session before, session after) between consecutive wakes."""
    return [(b.at - a.ended_at, a.session, b.session) for a, b in itertools.pairwise(session.wakes)]


def _sessions(session: AgentSession) -> int:
    return len({w.session for w in session.wakes})


def test_dev_and_holdout_use_disjoint_conversations(
    holdout: tuple[Conversation, ...], dev: tuple[Conversation, ...], shapes: dict[str, Shape]
) -> None:
    assert not set(SPLITS["dev"]) & set(SPLITS["holdout"])
    assert [c.sample_id for c in holdout] == list(SPLITS["holdout"])
    assert [c.sample_id for c in dev] == list(SPLITS["dev"])
    dev_shapes = build_shapes(dev, 11, LOCOMO)
    for name in LOCOMO:
        assert shapes[name].source in SPLITS["holdout"]
        assert dev_shapes[name].source in SPLITS["dev"]
    # Tools quote only the split's own conversations.
    holdout_people = {p for c in holdout for p in (c.user, c.agent)}
    dev_only = {p for c in dev for p in (c.user, c.agent)} - holdout_people
    assert len(dev_only) >= 4
    for shape in shapes.values():
        for use in (u for t in shape.session.turns for u in t.tools):
            quoted = set(re.findall(r"^\[D\d+:\d+\] (\w+):", use.output, re.M))
            assert not quoted & dev_only, (shape.name, use.name)
            assert quoted <= holdout_people, (shape.name, use.name)


def test_shapes_are_deterministic_for_a_seed(
    holdout: tuple[Conversation, ...], shapes: dict[str, Shape]
) -> None:
    assert build_shapes(holdout, 11) == shapes
    other = build_shapes(holdout, 12, LOCOMO)
    assert any(other[n].session.turns != shapes[n].session.turns for n in LOCOMO)
    assert shapes["synthetic"].session == generate_session(200, 11)


def test_every_locomo_shape_plants_facts_early_and_holds_no_documents(
    shapes: dict[str, Shape],
) -> None:
    for name in LOCOMO:
        s = shapes[name].session
        assert all(w.docs == () for w in s.wakes), name
        assert 3 <= len(s.decisions) <= 5, name
        assert [d.id for d in s.decisions] == [f"D-{n + 1}" for n in range(len(s.decisions))]
        assert {d.by_user for d in s.decisions} == {True, False}, name
        first_session = [w for w in s.wakes if w.session == s.wakes[0].session]
        early = {t.index for w in first_session[:10] for t in w.turns}
        texts = {w.ask for w in s.wakes} | {t.text for t in s.turns}
        for d in s.decisions:
            assert d.turn in early, (name, d.id)
            line = f"DECISION {d.id}: {d.text}"
            assert any(line in text for text in texts), (name, d.id)


def test_session_boundaries_follow_the_idle_limit(shapes: dict[str, Shape]) -> None:
    for name in LOCOMO:
        for gap, before, after in _gaps(shapes[name].session):
            assert gap > 0
            assert (after == before + 1) == (gap > SESSION_IDLE_S), name
            assert after in (before, before + 1), name


def test_short_chat_is_one_session_of_single_call_wakes(shapes: dict[str, Shape]) -> None:
    s = shapes["short_chat"].session
    assert _sessions(s) == 1 and 10 <= len(s.wakes) <= 15
    assert all(len(w.turns) == 1 and not w.turns[0].tools for w in s.wakes)


def test_long_session_never_idles_past_the_ttl(shapes: dict[str, Shape]) -> None:
    s = shapes["long_session"].session
    assert _sessions(s) == 1 and 110 <= len(s.turns) <= 130
    assert max(g for g, _, _ in _gaps(s)) < 300
    assert sum(w.consolidate_after for w in s.wakes) == 1


def _line_texts(conversations: tuple[Conversation, ...]) -> dict[str, str]:
    return {line.dia_id: line.text for c in conversations for ep in c.episodes for line in ep.lines}


def test_handoffs_ask_about_what_was_said_in_earlier_sessions(
    holdout: tuple[Conversation, ...], shapes: dict[str, Shape]
) -> None:
    shape = shapes["handoffs"]
    s = shape.session
    assert _sessions(s) >= 5 and shape.questions >= 5
    conv = next(c for c in holdout if c.sample_id == shape.source)
    lines = _line_texts((conv,))
    asked = 0
    for q in conv.questions:
        wake = next((w for w in s.wakes if w.ask.endswith(q.text)), None)
        if wake is None:
            continue
        asked += 1
        earlier = [w for w in s.wakes if w.session < wake.session]
        said = "\n".join(w.ask + "\n" + w.turns[-1].text for w in earlier)
        assert all(lines[e] in said for e in q.evidence), q.text
    assert asked == shape.questions


def test_question_wakes_carry_the_text_that_answers_them(shapes: dict[str, Shape]) -> None:
    for name in ("handoffs", "retrieval_heavy"):
        shape = shapes[name]
        assert len(shape.evidence) == shape.questions, name
        for number, texts in shape.evidence.items():
            wake = shape.session.wakes[number - 1]
            earlier = [w for w in shape.session.wakes if w.session < wake.session]
            said = "\n".join(w.ask + "\n" + w.turns[-1].text for w in earlier)
            assert texts and all(t in said for t in texts), (name, number)
    assert all(not shapes[n].evidence for n in ("short_chat", "long_session", "synthetic"))


def test_tool_heavy_wakes_make_several_calls_with_large_results(shapes: dict[str, Shape]) -> None:
    s = shapes["tool_heavy"].session
    several = [w for w in s.wakes if 3 <= len(w.turns) <= 6]
    assert len(several) >= 0.75 * len(s.wakes)
    for w in several:
        assert all(t.tools for t in w.turns[:-1]) and not w.turns[-1].tools
    sizes = [
        count_tokens(u.output)
        for t in s.turns
        for u in t.tools
        if u.name in ("read_notes", "search_journal")
    ]
    assert len(sizes) >= 20
    assert min(sizes) >= 600 and max(sizes) <= 6200
    assert max(sizes) > 3000


def test_retrieval_heavy_mostly_asks_about_earlier_sessions(shapes: dict[str, Shape]) -> None:
    shape = shapes["retrieval_heavy"]
    assert _sessions(shape.session) >= 4
    assert shape.questions > len(shape.session.wakes) / 2


def test_idle_gaps_wait_past_the_cache_ttl_but_not_the_idle_limit(
    shapes: dict[str, Shape],
) -> None:
    s = shapes["idle_gaps"].session
    gaps = [g for g, _, _ in _gaps(s)]
    assert _sessions(s) == 1
    assert sum(6 * 60 <= g <= 50 * 60 for g in gaps) >= 0.25 * len(gaps)
    assert max(gaps) < SESSION_IDLE_S


def test_exchanges_pair_the_users_turns_with_the_replies() -> None:
    sample = {
        "sample_id": "tiny",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Bo", "dia_id": "D1:1", "text": "Hi Ann!"},
                {"speaker": "Ann", "dia_id": "D1:2", "text": "Hi."},
                {
                    "speaker": "Ann",
                    "dia_id": "D1:3",
                    "text": "Guess what.",
                    "blip_caption": "a cat",
                },
                {"speaker": "Bo", "dia_id": "D1:4", "text": "What?"},
                {"speaker": "Ann", "dia_id": "D1:5", "text": "Bye!"},
            ],
        },
        "qa": [
            {"question": "Q?", "answer": 2022, "evidence": ["D1:3"]},
            {"question": "Trick?", "adversarial_answer": "no", "evidence": ["D1:2"]},
        ],
    }
    conv = parse_conversation(sample)
    (episode,) = conv.episodes
    assert len(episode.lines) == 5
    (ex,) = episode.exchanges  # Bo's opening and Ann's last word have no partner
    assert [line.dia_id for line in ex.ask] == ["D1:2", "D1:3"]
    assert ex.ask[1].text == "Guess what. [shares a photo: a cat]"
    assert [line.dia_id for line in ex.reply] == ["D1:4"]
    assert [(q.text, q.answer) for q in conv.questions] == [("Q?", "2022")]


def test_bad_input_is_named(tmp_path: Path, holdout: tuple[Conversation, ...]) -> None:
    with pytest.raises(UserError, match="unknown shape 'chatty'"):
        build_shape("chatty", holdout, 1)
    with pytest.raises(UserError, match="unknown split 'test'"):
        load_split(DATASET, "test")
    with pytest.raises(UserError, match="not found: pass --dataset"):
        load_split(tmp_path / "none.json", "dev")
    (tmp_path / "other.json").write_text('[{"sample_id": "conv-1", "conversation": {}}]')
    with pytest.raises(UserError, match="has 1 conversation"):
        load_split(tmp_path / "other.json", "holdout")
