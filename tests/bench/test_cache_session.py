"""The generated session has the shape the cache benchmark promises."""

from __future__ import annotations

import itertools

import pytest

from benchmarks.cache_session import AgentSession, generate_session
from wakeful.testing.simulator.tokens import count_tokens


@pytest.fixture(scope="module")
def session() -> AgentSession:
    return generate_session(200, seed=11)


def test_same_seed_same_session_and_other_seed_differs(session: AgentSession) -> None:
    assert generate_session(200, seed=11) == session
    assert generate_session(200, seed=12).turns != session.turns


def test_turns_are_model_calls_grouped_in_wakes(session: AgentSession) -> None:
    turns = session.turns
    assert [t.index for t in turns] == list(range(200))
    for wake in session.wakes:
        assert 2 <= len(wake.turns) <= 8
        assert all(t.tools for t in wake.turns[:-1]), "every call but the last uses a tool"
        assert not wake.turns[-1].tools
    assert all(a.at < b.at for a, b in itertools.pairwise(turns))


def test_decisions_are_planted_early_and_verbatim(session: AgentSession) -> None:
    assert [d.id for d in session.decisions] == ["D-1", "D-2", "D-3", "D-4", "D-5"]
    assert all(d.turn < 0.2 * 200 for d in session.decisions)
    assert {d.by_user for d in session.decisions} == {True, False}
    texts = {w.ask for w in session.wakes} | {t.text for t in session.turns}
    for d in session.decisions:
        line = f"DECISION {d.id}: {d.text}"
        assert any(line in text for text in texts)


def test_idle_gaps_expire_caches_and_the_longest_opens_a_new_session(
    session: AgentSession,
) -> None:
    wakes = session.wakes
    gaps = [(b.at - a.ended_at, a.session, b.session) for a, b in itertools.pairwise(wakes)]
    long = [g for g in gaps if g[0] > 300]
    assert len(long) >= 3
    assert any(g[0] > 3600 and g[2] == g[1] + 1 for g in long)
    assert all(g[1] == g[2] for g in gaps if g[0] <= 3600)


def test_one_consolidation_midway(session: AgentSession) -> None:
    flagged = [w for w in session.wakes if w.consolidate_after]
    assert len(flagged) == 1
    assert flagged[0].turns[-1].index + 1 >= 100
    before = session.wakes[session.wakes.index(flagged[0]) - 1]
    assert before.turns[-1].index + 1 < 100


def test_tool_output_varies_and_errors_get_fixed(session: AgentSession) -> None:
    uses = [u for t in session.turns for u in t.tools]
    sizes = [count_tokens(u.output) for u in uses if not u.is_error]
    assert min(sizes) < 200 and max(sizes) > 3000
    failed = {u.id for u in uses if u.is_error}
    fixes = [u for u in uses if u.fixes is not None]
    assert failed and fixes
    assert all(u.fixes in failed and not u.is_error for u in fixes)
    assert any(w.docs for w in session.wakes) and any(not w.docs for w in session.wakes)


def test_too_short_a_session_is_refused() -> None:
    with pytest.raises(ValueError, match="turns must be at least 10"):
        generate_session(5)
