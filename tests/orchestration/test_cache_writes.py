"""What a wake writes to the prompt cache, priced: the first call's session entries
(``first_call_write``) and the 1 h TTL's premium on what wakes add (``cache_ttls``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from wakeful.contracts import BreakpointRef, CallModelOut, CompileOut
from wakeful.workflows.cache import rates_for, update_clock, wake_cache
from wakeful.workflows.pacing import CacheClock, CacheTtls, cache_ttls, first_call_write

T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
SONNET = rates_for("anthropic", "claude-sonnet-4-6")
FIVE = CacheTtls(stable="1h", session="5m")
HOUR = CacheTtls(stable="1h", session="1h")
MODEL = ("anthropic", "claude-sonnet-4-6")


def clock(**kw: object) -> CacheClock:
    base: dict[str, object] = {
        "provider": "anthropic",
        "model": "claude-sonnet-4-6",
        "last_used_at": T0,
        "last_write_at": T0,
        "stable_tokens": 4_000,
        "stable_ttl_s": 3600,
        "session_tokens": 10_000,
        "session_ttl_s": 300,
    }
    return CacheClock.model_validate(base | kw)


COLD = T0 + timedelta(minutes=40)  # past the 5 min session TTL, within the 1 h stable one


def test_a_cold_single_call_wake_after_wakes_nothing_read_writes_no_session_entry() -> None:
    # Eight wakes of one call each, every one followed by 40 idle minutes: nothing read
    # what their first calls wrote.
    lonely = clock(calls=(1,) * 8, gaps=(2400,) * 8)
    d = first_call_write(lonely, FIVE, COLD, SONNET)
    assert not d.write and d.expected_reads == 0.0
    assert "0 of the last 8 wakes were read again within 5m" in d.why
    # write: 10,000 at 3.75/MTok; no write: 10,000 at 3.00/MTok.
    assert "written $0.037500 vs sent uncached $0.030000" in d.why
    assert "the first call writes no session entry" in d.why
    # Pacing would give those 40-minute gaps 1 h entries, which every next wake reads:
    # written then. Wakes two hours apart (a job run every two hours) are read by nothing.
    assert wake_cache(lonely, SONNET, COLD).write.write
    hourly = lonely.model_copy(update={"gaps": (7200,) * 8})
    plan = wake_cache(hourly, SONNET, T0 + timedelta(hours=2))
    assert not plan.write.write and plan.ttls.session == "5m"
    assert plan.first.session == "none" and plan.first.stable == plan.ttls.stable


def test_the_rule_is_priced_expected_reads_against_the_write_premium() -> None:
    # At 5 min prices a write pays once q * (3.75 - 0.30) >= 3.75 - 3.00: q >= 0.2174.
    one = clock(calls=(2,) + (1,) * 7, gaps=(2400,) * 8)  # q = 1/8: not worth it
    two = clock(calls=(2, 1, 1, 1, 1, 1, 1, 1), gaps=(2400, 60) + (2400,) * 6)  # q = 2/8
    assert not first_call_write(one, FIVE, COLD, SONNET).write
    assert first_call_write(two, FIVE, COLD, SONNET).write
    # A 1 h entry costs 6.00: it pays from q * (6.00 - 0.30) >= 3.00, q >= 0.5263.
    half = clock(calls=(1,) * 8, gaps=(1200,) * 4 + (7200,) * 4, stable_ttl_s=300)
    late = T0 + timedelta(hours=2)
    assert not first_call_write(half, HOUR, late, SONNET).write  # 4/8 read within 1 h
    most = half.model_copy(update={"gaps": (1200,) * 5 + (7200,) * 3})
    assert first_call_write(most, HOUR, late, SONNET).write  # 5/8


def test_a_warm_prefix_or_too_little_history_is_always_written() -> None:
    lonely = clock(calls=(1,) * 8, gaps=(2400,) * 8)
    warm = first_call_write(lonely, FIVE, T0 + timedelta(minutes=2), SONNET)
    assert warm.write and "warm" in warm.why
    young = clock(calls=(1,) * 3, gaps=(2400,) * 3)
    assert first_call_write(young, FIVE, COLD, SONNET).write
    # A clock kept before it counted calls: its older gaps are not paired with anything.
    old = clock(calls=(1,) * 3, gaps=(60,) * 5 + (2400,) * 3)
    assert "3 wake(s) recorded" in first_call_write(old, FIVE, COLD, SONNET).why


def test_the_clock_counts_calls_and_what_a_wake_added_beyond_a_rewrite() -> None:
    window = CompileOut(window_hash="w", input_tokens=12_000)
    wrote = CallModelOut(output_hash="o", stop_reason="end_turn", cache_creation_input_tokens=900)
    c = clock(session_tokens=10_000, stable_tokens=4_000)
    c = c.with_gap(COLD)  # the session prefix expired: this wake rewrites its 10,000 tokens
    assert c.wake_rewrite == 10_000
    rewrote = wrote.model_copy(update={"cache_creation_input_tokens": 10_500})
    c = update_clock(c, *MODEL, window, rewrote, COLD)
    c = update_clock(c, *MODEL, window, wrote, COLD + timedelta(seconds=20))
    c = c.with_gap(COLD + timedelta(minutes=2))  # warm: nothing to rewrite
    assert (c.calls[-1], c.written[-1], c.added[-1], c.wake_rewrite) == (2, 11_400, 1_400, 0)


def test_the_one_hour_premium_is_priced_on_what_wakes_added() -> None:
    # Gaps of 10-40 minutes, each cold wake rewrote the 20k prefix (written 21k) but added
    # 1k: a 1 h entry would have turned each rewrite into a read and written 1k.
    base = clock(
        gaps=(600, 90, 2400, 1200),
        written=(21_000, 1_000, 21_000, 21_000),
        added=(1_000,) * 4,
        session_tokens=20_000,
    )
    ttls = cache_ttls(base, SONNET)
    assert ttls.session == "1h" and "1000 added per wake" in ttls.why
    # Priced on everything written (as before): the rewrites look like lumps, 5 min stays.
    assert cache_ttls(base, SONNET, added_only=False).session == "5m"
    # A clock kept before ``added`` (fewer entries than ``written``) is priced as before.
    older = base.model_copy(update={"added": (1_000,) * 2})
    assert cache_ttls(older, SONNET).session == "5m"


def test_a_call_without_session_writes_leaves_the_session_cold_and_its_size_known() -> None:
    marks = (
        BreakpointRef(name="stable", ttl="1h", prefix_tokens=4_000),
        BreakpointRef(name="history", ttl="none", prefix_tokens=13_000),
        BreakpointRef(name="rolling", ttl="none", prefix_tokens=14_000),
    )
    window = CompileOut(window_hash="w", input_tokens=14_200, breakpoints=marks)
    read_stable = CallModelOut(
        output_hash="o", stop_reason="end_turn", input_tokens=10_200, cache_read_input_tokens=4_000
    )
    c = update_clock(clock(), *MODEL, window, read_stable, COLD)
    assert not c.session_written and not c.warm("session", COLD + timedelta(seconds=30))
    assert c.warm("stable", COLD + timedelta(seconds=30))
    assert (c.session_tokens, c.session_ttl_s, c.last_used_at) == (10_000, 300, COLD)
    # The wake's second call writes them: warm again.
    marks5 = tuple(m.model_copy(update={"ttl": "5m"}) if m.ttl == "none" else m for m in marks)
    wrote = read_stable.model_copy(
        update={"input_tokens": 0, "cache_creation_input_tokens": 10_500}
    )
    later = COLD + timedelta(seconds=30)
    c = update_clock(c, *MODEL, window.model_copy(update={"breakpoints": marks5}), wrote, later)
    assert c.session_written and c.warm("session", later + timedelta(seconds=30))


@pytest.mark.parametrize("session", ["5m", "1h"])
def test_ttls_without_session_writes_keep_the_stable_entry(session: str) -> None:
    ttls = CacheTtls(stable="1h", session=session, why="x")  # type: ignore[arg-type]
    out = ttls.without_session_writes()
    assert (out.stable, out.session, out.why) == ("1h", "none", "")
