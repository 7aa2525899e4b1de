"""The pacing function, unit by unit: the same inputs always price and choose the same way."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from wakeful.contracts import CallModelOut, CompileOut
from wakeful.workflows.cache import rates_for, update_clock
from wakeful.workflows.pacing import (
    CacheClock,
    PacingInput,
    PacingPolicy,
    Rates,
    decide,
    ttl_seconds,
)

T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
SONNET = rates_for("anthropic", "claude-sonnet-4-6")


def clock(**kw: object) -> CacheClock:
    base: dict[str, object] = {
        "provider": "anthropic",
        "model": "claude-sonnet-4-6",
        "last_used_at": T0,
        "last_write_at": T0,
        "stable_tokens": 4_000,
        "stable_ttl_s": 3600,
        "session_tokens": 20_000,
        "session_ttl_s": 300,
        "fresh_tokens": 1_500,
    }
    return CacheClock.model_validate(base | kw)


def at_wake(after: timedelta, **kw: object) -> PacingInput:
    return PacingInput(now=T0 + after, clock=clock(**kw), rates=SONNET)


def test_prices_come_from_the_price_table() -> None:
    assert SONNET == Rates(
        input=3.0, output=15.0, cache_read=0.3, cache_write_5m=3.75, cache_write_1h=6.0
    )
    assert rates_for("anthropic", "no-such-model") is None


def test_a_warm_session_continues_and_pays_cache_reads() -> None:
    d = decide(at_wake(timedelta(minutes=2)))
    assert d.choice == "continue_now"
    # 2 calls x (4k stable + 20k session) read at $0.30/MTok.
    assert d.option("continue_now").cost_usd == pytest.approx(2 * 24_000 * 0.3e-6)
    assert not d.option("handoff").allowed  # warm sessions are kept by default
    assert "idle 2m00s after the last cache use <= session TTL 5m00s" in d.reason


def test_an_idle_gap_longer_than_the_ttl_makes_a_fresh_session_cheaper() -> None:
    d = decide(at_wake(timedelta(minutes=10)))
    assert d.choice == "handoff"
    # The 1h stable prefix is still warm (read); the rest is written at the 5m price.
    cont = 4_000 * 0.3e-6 + 20_000 * 3.75e-6 + 24_000 * 0.3e-6
    fresh = 4_000 * 0.3e-6 + 1_500 * 3.75e-6 + 5_500 * 0.3e-6
    assert d.option("continue_now").cost_usd == pytest.approx(cont)
    assert d.option("handoff").cost_usd == pytest.approx(fresh)
    assert "idle 10m00s after the last cache use > session TTL 5m00s" in d.reason
    assert "handoff $" in d.reason and "continue_now $" in d.reason


def test_a_cold_session_smaller_than_a_fresh_one_continues() -> None:
    d = decide(at_wake(timedelta(minutes=10), session_tokens=1_000, fresh_tokens=1_500))
    assert d.choice == "continue_now"


def test_past_the_stable_ttl_both_options_rewrite_the_stable_prefix() -> None:
    d = decide(at_wake(timedelta(minutes=50), stable_ttl_s=1800))
    stable_write = 4_000 * 6.0e-6  # 1h writes cost 2x input
    assert d.option("handoff").cost_usd == pytest.approx(
        stable_write + 1_500 * 3.75e-6 + 5_500 * 0.3e-6
    )


def test_max_idle_forbids_continuing_whatever_the_price() -> None:
    inp = at_wake(timedelta(hours=2), session_tokens=100, fresh_tokens=5_000)
    d = decide(inp)
    assert d.choice == "handoff"
    assert not d.option("continue_now").allowed
    assert "max_idle" in d.option("continue_now").why


PRICED_IDLE = PacingPolicy(idle_ends_session=False)


def test_past_an_unset_idle_limit_a_small_session_continues_when_that_is_cheaper() -> None:
    """No handoff_after_idle set: a session past max_idle is priced like any cold one.
    Rewriting its 300 tokens costs less than a fresh prefix and the evidence of it the
    next session's first wakes would bring back, so it goes on, and the option says why."""
    inp = at_wake(timedelta(hours=30), session_tokens=300, fresh_tokens=600)
    inp = inp.model_copy(
        update={
            "policy": PRICED_IDLE,
            "clock": inp.clock.model_copy(update={"fresh_evidence_tokens": 300}),
            "price_next_session": True,
        }
    )
    d = decide(inp)
    assert d.choice == "continue_now"
    cont = d.option("continue_now")
    # Everything is cold after 30 h: the stable prefix is written at the 1 h price.
    first = 4_000 * 6.0e-6 + 300 * 3.75e-6
    assert cont.cost_usd == pytest.approx(first + 4_300 * 0.3e-6)
    handoff = 4_000 * 6.0e-6 + 600 * 3.75e-6 + 4_600 * 0.3e-6 + 2 * 300 * 3.0e-6
    assert d.option("handoff").cost_usd == pytest.approx(handoff)
    assert d.option("handoff").allowed
    assert "idle 30h00m > max_idle 1h00m, but no handoff_after_idle was set" in cont.why
    assert "pacing continue_now" in d.reason and "idle 30h00m > max_idle 1h00m" in d.reason
    # The same session under the default policy (an idle limit that always ends it).
    strict = decide(inp.model_copy(update={"policy": PacingPolicy()}))
    assert strict.choice == "handoff" and not strict.option("continue_now").allowed


def test_past_an_unset_idle_limit_a_large_session_still_hands_off() -> None:
    inp = at_wake(timedelta(hours=2), session_tokens=20_000, fresh_tokens=1_500)
    d = decide(inp.model_copy(update={"policy": PRICED_IDLE, "price_next_session": True}))
    assert d.option("continue_now").allowed
    assert d.choice == "handoff"


def test_past_an_unset_idle_limit_while_idle_the_session_may_sleep_on() -> None:
    """Planned while idle (the next wake's time known): sleeping through the miss is
    priced too, and keep-warm calls are not offered for a cache that is cold already."""
    c = clock(session_tokens=300, fresh_tokens=600, fresh_evidence_tokens=300)
    later = T0 + timedelta(hours=5)
    inp = PacingInput(
        now=T0 + timedelta(hours=2),
        clock=c,
        rates=SONNET,
        policy=PRICED_IDLE,
        next_call_at=later,
        price_next_session=True,
    )
    d = decide(inp)
    assert d.choice == "sleep_accept_miss"
    assert not d.option("keep_warm").allowed


def test_past_an_unset_idle_limit_without_a_price_the_limit_holds() -> None:
    inp = at_wake(timedelta(hours=2), session_tokens=100, fresh_tokens=5_000)
    d = decide(inp.model_copy(update={"policy": PRICED_IDLE, "rates": None}))
    assert d.choice == "handoff" and not d.option("continue_now").allowed


def test_no_open_session_starts_a_fresh_one() -> None:
    d = decide(at_wake(timedelta(minutes=1)).model_copy(update={"session_open": False}))
    assert d.choice == "handoff"
    assert not d.option("continue_now").allowed


def test_keep_warm_beats_a_miss_when_the_next_wake_is_a_few_ttls_away() -> None:
    soon = T0 + timedelta(minutes=12)
    inp = PacingInput(now=T0, clock=clock(session_tokens=2_000), rates=SONNET, next_call_at=soon)
    d = decide(inp)
    assert d.choice == "keep_warm"
    # A call every 4m30s from the last use keeps the prefix warm until the wake at 12m.
    assert d.keep_warm_at == (T0 + timedelta(minutes=4, seconds=30), T0 + timedelta(minutes=9))
    ping = 6_000 * 0.3e-6 + 15.0e-6
    assert d.option("keep_warm").cost_usd == pytest.approx(2 * ping + 2 * 6_000 * 0.3e-6)
    assert d.option("sleep_accept_miss").cost_usd == pytest.approx(
        4_000 * 0.3e-6 + 2_000 * 3.75e-6 + 6_000 * 0.3e-6
    )


def test_a_long_transcript_is_cheaper_handed_off_than_kept_warm() -> None:
    soon = T0 + timedelta(minutes=12)
    d = decide(PacingInput(now=T0, clock=clock(), rates=SONNET, next_call_at=soon))
    assert d.option("keep_warm").allowed
    assert d.choice == "handoff"
    keep = PacingPolicy(allow_handoff=False)
    inp = PacingInput(now=T0, clock=clock(), rates=SONNET, policy=keep, next_call_at=soon)
    assert decide(inp).choice == "keep_warm"


def test_a_day_away_keep_warm_needs_too_many_calls_and_a_handoff_wins() -> None:
    tomorrow = T0 + timedelta(days=1)
    lenient = PacingPolicy(max_idle=timedelta(days=2))
    inp = PacingInput(now=T0, clock=clock(), rates=SONNET, policy=lenient, next_call_at=tomorrow)
    d = decide(inp)
    assert not d.option("keep_warm").allowed
    assert "needs 319 calls > max_keep_warm_calls 3" in d.option("keep_warm").why
    assert d.option("sleep_accept_miss").allowed
    assert d.choice == "handoff"
    assert "next wake expected 24h00m after the last cache use" in d.reason
    # Under the default max_idle of 1h the session could not survive the night anyway.
    strict = decide(inp.model_copy(update={"policy": PacingPolicy()}))
    assert strict.choice == "handoff"
    assert "max_idle" in strict.option("sleep_accept_miss").why


def test_policy_switches_are_honoured() -> None:
    no_handoff = PacingPolicy(allow_handoff=False)
    d = decide(at_wake(timedelta(minutes=10)).model_copy(update={"policy": no_handoff}))
    assert d.choice == "continue_now"
    assert "allow_handoff is off" in d.option("handoff").why
    no_keep = PacingPolicy(allow_keep_warm=False)
    inp = PacingInput(
        now=T0, clock=clock(), rates=SONNET, policy=no_keep, next_call_at=T0 + timedelta(minutes=12)
    )
    assert decide(inp).choice != "keep_warm"


def test_without_a_price_the_decision_is_made_on_rules_alone() -> None:
    d = decide(at_wake(timedelta(minutes=10)).model_copy(update={"rates": None}))
    assert d.choice == "continue_now"
    assert all(o.cost_usd is None for o in d.options)
    assert "has no known price" in d.reason


def test_decisions_are_deterministic_and_priced_in_order() -> None:
    a, b = decide(at_wake(timedelta(minutes=7))), decide(at_wake(timedelta(minutes=7)))
    assert a == b
    assert [o.name for o in a.options] == [
        "continue_now",
        "sleep_accept_miss",
        "keep_warm",
        "handoff",
    ]
    assert a.prices().startswith("continue_now=0.")


def test_a_clock_kept_for_another_provider_or_model_is_cold() -> None:
    own = at_wake(timedelta(minutes=2)).model_copy(
        update={"provider": "anthropic", "model": "claude-sonnet-4-6"}
    )
    assert decide(own) == decide(at_wake(timedelta(minutes=2)))  # its own clock: warm
    # Both prefixes written (the 1h stable one at the 1h price), then one read of both.
    cold = 4_000 * 6.0e-6 + 20_000 * 3.75e-6 + 24_000 * 0.3e-6
    fresh = 4_000 * 6.0e-6 + 1_500 * 3.75e-6 + 5_500 * 0.3e-6
    for provider, model in (("anthropic", "claude-opus-4-6"), ("openai", "gpt-5")):
        d = decide(own.model_copy(update={"provider": provider, "model": model}))
        assert d.option("continue_now").cost_usd == pytest.approx(cold)
        assert d.option("handoff").cost_usd == pytest.approx(fresh)
        assert d.option("handoff").allowed and d.choice == "handoff"
        assert f"kept for anthropic/claude-sonnet-4-6, not {provider}/{model}" in d.reason


def test_keep_warm_is_not_offered_for_another_models_cache() -> None:
    soon = T0 + timedelta(minutes=12)
    inp = PacingInput(now=T0, clock=clock(session_tokens=2_000), rates=SONNET, next_call_at=soon)
    own = {"provider": "anthropic", "model": "claude-sonnet-4-6"}
    assert decide(inp.model_copy(update=own)).choice == "keep_warm"
    d = decide(inp.model_copy(update={"provider": "openai", "model": "gpt-5"}))
    assert not d.option("keep_warm").allowed
    assert "already cold (the clock was kept for anthropic/claude-sonnet-4-6" in (
        d.option("keep_warm").why
    )


def test_an_unused_clock_belongs_to_whoever_calls_next() -> None:
    """A run's first decision is unchanged by naming the model (recorded runs replay)."""
    fresh = PacingInput(now=T0, clock=CacheClock(), rates=SONNET)
    assert decide(fresh.model_copy(update={"provider": "openai", "model": "gpt-5"})) == decide(
        fresh
    )


def test_a_call_on_another_model_does_not_inherit_the_clocks_last_use() -> None:
    window = CompileOut(window_hash="w", stable_prefix_hash="s", input_tokens=5_000, max_event_id=0)
    miss = CallModelOut(output_hash="o", stop_reason="end_turn", input_tokens=5_000)
    later = T0 + timedelta(minutes=1)
    same = update_clock(clock(), "anthropic", "claude-sonnet-4-6", window, miss, later)
    assert same.last_used_at == T0 and same.warm("session", later)
    moved = update_clock(clock(), "openai", "gpt-5", window, miss, later)
    assert (moved.provider, moved.model) == ("openai", "gpt-5")
    assert (moved.last_used_at, moved.last_write_at) == (None, None)
    assert not moved.warm("session", later) and not moved.warm("stable", later)


def test_ttl_names() -> None:
    assert ttl_seconds("anthropic", "1h") == 3600
    assert ttl_seconds("openai", None) == 300
    with pytest.raises(ValueError, match="unknown cache TTL"):
        ttl_seconds("anthropic", "2h")


def test_a_fresh_session_is_priced_with_the_evidence_it_would_pull_back() -> None:
    """The compile says what a fresh session writes (registry, note, summaries and the
    evidence its first wake retrieves of this session); the clock takes that, not the
    semi-stable prefix alone, and an idle session whose history a fresh one would fetch
    back anyway continues."""
    from wakeful.compiler.ledger import Ledger
    from wakeful.contracts import BreakpointRef

    marks = (
        BreakpointRef(name="stable", ttl="1h", prefix_tokens=4_000),
        BreakpointRef(name="semi_stable", ttl="5m", prefix_tokens=5_500),
    )
    buckets = {"semi_stable": 1_500, "summaries": 500, "recent": 15_000, "evidence": 0}
    ledger = Ledger.model_construct(tokens_by_bucket=buckets)
    fresh = ledger.fresh_session_tokens(4_000)
    assert fresh == 1_500 + 500 + 4_000  # at most one wake's evidence comes back
    reply = CallModelOut(
        output_hash="o",
        stop_reason="end_turn",
        input_tokens=0,
        cache_read_input_tokens=4_000,
        cache_creation_input_tokens=16_000,
    )
    base = {"window_hash": "w", "stable_prefix_hash": "s", "input_tokens": 21_000}
    said = CompileOut(**base, max_event_id=9, breakpoints=marks, fresh_tokens=fresh)
    older = CompileOut(**base, max_event_id=9, breakpoints=marks)
    model = ("anthropic", "claude-sonnet-4-6")
    honest = update_clock(clock(), *model, said, reply, T0)
    assert honest.fresh_tokens == 6_000 and honest.session_tokens == 16_000
    assert update_clock(clock(), *model, older, reply, T0).fresh_tokens == 1_500  # as before
    d = decide(PacingInput(now=T0 + timedelta(minutes=10), clock=honest, rates=SONNET))
    # 6,000 fresh tokens written would cost less than 16,000 rewritten: still a handoff ...
    assert d.choice == "handoff"
    assert d.option("handoff").cost_usd == pytest.approx(
        4_000 * 0.3e-6 + 6_000 * 3.75e-6 + 10_000 * 0.3e-6
    )
    # ... but a session no bigger than what a fresh one would fetch back continues.
    small = honest.model_copy(update={"session_tokens": 5_000})
    d = decide(PacingInput(now=T0 + timedelta(minutes=10), clock=small, rates=SONNET))
    assert d.choice == "continue_now"
    assert "fresh prefix 6000 tokens written" in d.option("handoff").why


def test_cache_ttls_follow_the_idle_gaps_and_what_a_miss_would_cost() -> None:
    from wakeful.workflows.pacing import cache_ttls

    burst = clock(gaps=(30, 60, 45), written=(800, 900, 700), stable_ttl_s=300)
    assert (cache_ttls(burst, SONNET).stable, cache_ttls(burst, SONNET).session) == ("5m", "5m")
    assert cache_ttls(clock(gaps=(), stable_ttl_s=3600), SONNET).stable == "5m"  # nothing seen
    # Gaps of 10-40 minutes between wakes, a 20k session prefix, 1k written per wake: a
    # missed prefix (rewritten at 3.75/MTok instead of read at 0.30) costs far more than
    # the 1 h premium (6.00 - 3.75) on what the wakes write.
    chatty = clock(gaps=(600, 90, 2400, 1200), written=(1000,) * 4, session_tokens=20_000)
    ttls = cache_ttls(chatty, SONNET)
    assert (ttls.stable, ttls.session) == ("1h", "1h")
    assert "3 of the last 4 idle gap(s) between 5 min and 1 h" in ttls.why
    # The same gaps with lumpy writes (a history cut rewrote 60k): the premium would not pay.
    lumpy = chatty.model_copy(update={"written": (1000, 60_000, 1000, 60_000)})
    assert (cache_ttls(lumpy, SONNET).stable, cache_ttls(lumpy, SONNET).session) == ("1h", "5m")
    # One long gap: the stable prefix takes 1 h (and keeps it), the session does not.
    once = clock(gaps=(900, 60, 60), written=(1000,) * 3, stable_ttl_s=300)
    assert (cache_ttls(once, SONNET).stable, cache_ttls(once, SONNET).session) == ("1h", "5m")
    later = clock(gaps=(60, 60, 60), written=(1000,) * 3, stable_ttl_s=3600)
    assert cache_ttls(later, SONNET).stable == "1h"


def test_the_clock_remembers_gaps_and_writes_per_wake() -> None:
    c = clock(gaps=(), written=(), wake_written=0)
    window = CompileOut(window_hash="w", stable_prefix_hash="s", input_tokens=5_000, max_event_id=0)
    wrote = CallModelOut(output_hash="o", stop_reason="end_turn", cache_creation_input_tokens=1_200)
    c = update_clock(c, "anthropic", "claude-sonnet-4-6", window, wrote, T0)
    c = update_clock(c, "anthropic", "claude-sonnet-4-6", window, wrote, T0 + timedelta(seconds=5))
    assert c.wake_written == 2_400
    c = c.with_gap(T0 + timedelta(minutes=12))
    assert (c.gaps, c.written, c.wake_written) == ((715,), (2_400,), 0)


def test_an_honest_handoff_pays_the_evidence_of_the_next_sessions_first_wakes() -> None:
    """Each of the next session's first wakes brings back, as evidence sent as input, what
    the transcript held; the old price counted its first wake's prefix alone."""
    cold = at_wake(timedelta(minutes=10), session_tokens=3_000, fresh_evidence_tokens=1_200)
    old = decide(cold)
    assert old.choice == "handoff"  # 1,500 fresh tokens written < 3,000 rewritten
    honest = decide(cold.model_copy(update={"price_next_session": True}))
    first = 4_000 * 0.3e-6 + 1_500 * 3.75e-6 + 5_500 * 0.3e-6
    later = 2 * 1_200 * 3.0e-6  # handoff_wakes 3: two more wakes' evidence, as input
    assert honest.option("handoff").cost_usd == pytest.approx(first + later)
    assert honest.choice == "continue_now"  # the session is cheaper to keep
    assert "1200 tokens of evidence in each of the next 2 wake(s)" in honest.option("handoff").why


def test_the_clock_keeps_the_evidence_a_fresh_session_would_bring() -> None:
    from wakeful.compiler.ledger import Ledger

    buckets = {"semi_stable": 1_500, "summaries": 500, "recent": 15_000, "evidence": 200}
    ledger = Ledger.model_construct(tokens_by_bucket=buckets)
    assert ledger.fresh_session_evidence(1_000) == 1_000
    # A session of one wake holds its transcript in the current wake (the ask bucket): a
    # fresh session would bring that back too, so a handoff is not priced as if it were free.
    one_wake = Ledger.model_construct(tokens_by_bucket={"semi_stable": 40, "ask": 300})
    assert one_wake.fresh_session_evidence(1_000) == 300
    assert one_wake.fresh_session_tokens(1_000) == 340
    reply = CallModelOut(
        output_hash="o",
        stop_reason="end_turn",
        input_tokens=0,
        cache_read_input_tokens=4_000,
        cache_creation_input_tokens=1_000,
    )
    base = {"window_hash": "w", "stable_prefix_hash": "s", "input_tokens": 5_000}
    said = CompileOut(**base, fresh_tokens=3_000, fresh_evidence_tokens=1_000)
    model = ("anthropic", "claude-sonnet-4-6")
    kept = update_clock(clock(), *model, said, reply, T0)
    assert kept.fresh_evidence_tokens == 1_000
    older = CompileOut(**base, fresh_tokens=3_000)  # a compile that did not say
    assert update_clock(kept, *model, older, reply, T0).fresh_evidence_tokens == 1_000
