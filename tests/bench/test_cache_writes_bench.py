"""The cache bench prices what Wakeful writes to the cache through the runtime's own rules
(``wakeful.workflows.cache.wake_cache``): writes nothing reads in time are not made."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest

from benchmarks.cache_bench import bench_policy, replay, run
from benchmarks.cache_session import MODEL, AgentSession, Turn, Wake
from benchmarks.cache_strategies import FullHistory
from benchmarks.cache_text import INSTRUCTIONS, TOOLS
from benchmarks.cache_wakeful import Wakeful
from wakeful.tokenizers import BpeCounter

DATASET = Path(__file__).resolve().parents[2] / ".." / "shared" / "bench" / "locomo-dev.json"


def _every_two_hours(wakes: int) -> AgentSession:
    """A job that wakes every two hours and answers in one call."""
    out = []
    for n in range(wakes):
        at = n * 7200.0
        reply = f"Run {n}: the nightly export finished; {n * 37} rows checked, none failed."
        turn = Turn(n, n + 1, at + 0.5, 3.0, reply, ())
        ask = f"Scheduled check {n}: report on the export job and anything that changed."
        out.append(Wake(n + 1, 1 + n // 3, at, ask, (), (turn,)))
    return AgentSession(MODEL, INSTRUCTIONS, TOOLS, tuple(out), (), seed=0)


def test_a_job_nothing_reads_in_time_does_not_write_its_session_prefix() -> None:
    session = _every_two_hours(8)
    wakeful = Wakeful(session, bench_policy(), BpeCounter())
    try:
        tallies, _ = asyncio.run(replay(session, [wakeful, FullHistory()], lambda _: None))
    finally:
        wakeful.close()
    decisions = [w.write for w in wakeful.writes]
    # Four wakes recorded before the rule guesses (the first has no gap before it); from
    # then on nothing was read in time.
    assert decisions == [True] * 4 + [False] * 4
    details = wakeful.details()
    assert (details["first_calls_without_session_writes"], details["wakes"]) == (4, 8)
    t = tallies["wakeful"]
    unwritten = t.turns[4:]
    assert all(u.input_tokens > 0 for u in unwritten)
    # The stable prefix alone is cached on those calls (read, or written when it expired).
    stable = wakeful.windows[-1].ledger.breakpoints[0].prefix_tokens
    assert all(u.cache_creation_input_tokens <= stable * 1.2 for u in unwritten)
    assert t.reads.never_read_tokens < tallies["full_history"].reads.never_read_tokens


@pytest.mark.skipif(not DATASET.is_file(), reason=f"no LoCoMo file at {DATASET}")
def test_idle_gaps_read_what_their_wakes_wrote() -> None:
    """Gaps of 6-50 minutes between single-call wakes: priced on what wakes add, the 1 h
    entries pay, and the wakes read the prefix instead of rewriting it after each gap
    (before: a hit ratio of 0.66 and half of all writes never read)."""
    shape = run(shapes=("idle_gaps",), split="dev", seed=12, dataset=DATASET, variants=False)
    w = shape["shapes"]["idle_gaps"]["strategies"]["wakeful"]
    assert w["cache_hit_ratio"] >= 0.85
    assert w["written_never_read_share"] <= 0.5


def _with_sessions(session: AgentSession, sessions: tuple[int, ...]) -> AgentSession:
    wakes = tuple(replace(w, session=n) for w, n in zip(session.wakes, sessions, strict=True))
    return replace(session, wakes=wakes)


def test_a_small_session_continues_past_the_idle_limit_when_pacing_prices_it_cheaper() -> None:
    """As the agent workflow does for an agent that set no idle limit: the wakes the shape
    puts in a new session (two hours after the last) continue Wakeful's session when
    rewriting it costs less than a fresh one and the evidence of it the next wakes would
    bring back; the transcript stays in the window, the next wakes read it from the cache."""
    session = _with_sessions(_every_two_hours(4), (1, 1, 2, 2))
    wakeful = Wakeful(session, bench_policy(), BpeCounter())
    ended = Wakeful(session, bench_policy(), BpeCounter(), name="ended", continue_past_idle=False)
    try:
        asyncio.run(replay(session, [wakeful, FullHistory()], lambda _: None))
        asyncio.run(replay(session, [ended, FullHistory()], lambda _: None))
    finally:
        wakeful.close()
        ended.close()
    assert wakeful.details()["sessions"] == 1
    assert wakeful.details()["continued_past_idle_at_wakes"] == [3]
    reason = wakeful.idle_reasons[-1]
    assert "continue_now" in reason.split(";")[0] and "no handoff_after_idle was set" in reason
    assert ended.details()["sessions"] == 2
    assert ended.details()["continued_past_idle_at_wakes"] == []
    # The continued session's last window still holds the first wake's reply, verbatim.
    first_reply = session.wakes[0].turns[0].text
    assert first_reply in str(wakeful.windows[-1].request)
    assert first_reply not in str(ended.windows[-1].request)
