"""The report's arithmetic and its load-bearing check."""

from __future__ import annotations

from benchmarks.cache_bench import Tally
from benchmarks.cache_report import (
    BASELINES,
    all_held,
    held_decisions,
    kept_decisions,
    strategy_report,
)
from benchmarks.cache_session import Decision
from wakeful.providers.base import Usage

DECISIONS = (
    Decision("D-1", 'Never retry a POST without the "Idempotency-Key" header.', 1, False),
    Decision("D-2", "Flags default to off.", 2, True),
)


def test_a_decision_counts_as_kept_only_verbatim() -> None:
    request = {"messages": [{"content": [{"text": "ok: " + DECISIONS[0].text}]}]}
    assert kept_decisions(request, DECISIONS) == ["D-1"]
    paraphrased = {"messages": [{"content": [{"text": "Flags default off."}]}]}
    assert kept_decisions(paraphrased, DECISIONS) == []


def test_strategy_report_sums_turns_and_splits_out_maintenance() -> None:
    tally = Tally(
        turns=[
            Usage(input_tokens=10, cache_read_input_tokens=80, cache_creation_input_tokens=10),
            Usage(input_tokens=0, cache_read_input_tokens=100, cache_creation_input_tokens=0),
        ],
        maintenance=[("compaction", Usage(input_tokens=1000))],
        cost=1.5,
        maintenance_cost=0.5,
        last_request={"system": [{"text": DECISIONS[1].text}]},
    )
    r = strategy_report(tally, DECISIONS, full_history_cost=3.0)
    assert (r["input_tokens"], r["cache_read_tokens"], r["cache_write_tokens"]) == (10, 180, 10)
    assert r["cache_hit_ratio"] == 0.9
    assert r["mean_window_tokens"] == 100
    assert r["cost_usd"] == 1.5 and r["maintenance_cost_usd"] == 0.5
    assert r["cost_vs_full_history"] == 0.5
    assert r["maintenance_calls"] == 1
    assert r["load_bearing_kept"] is False and r["load_bearing_missing"] == ["D-1"]


def test_held_share_counts_only_the_calls_after_a_decision_was_stated() -> None:
    tally = Tally()
    both = {"system": [{"text": DECISIONS[1].text}], "messages": [{"content": DECISIONS[0].text}]}
    only_first = {"messages": [{"content": [{"type": "text", "text": DECISIONS[0].text}]}]}
    for index, request in ((1, both), (2, both), (3, only_first), (4, only_first)):
        held_decisions(tally, request, DECISIONS, index)
    # D-1 was stated at call 1: calls 2-4 come after it; D-2 at call 2: calls 3-4.
    assert tally.held == {"D-1": [3, 3], "D-2": [2, 0]}
    r = strategy_report(tally, DECISIONS)
    assert r["load_bearing_held_share"] == {"D-1": 1.0, "D-2": 0.0}
    assert r["cost_vs_full_history"] == 0.0, "no full history to compare with"


def test_evidence_counts_only_when_every_turn_is_held() -> None:
    request = {"messages": [{"content": [{"type": "tool_result", "content": "[D1:3] Ann: hi"}]}]}
    assert all_held(request, ["Ann: hi"])
    assert not all_held(request, ["Ann: hi", "Bo: bye"])
    tally = Tally(evidence=[4, 3])
    assert strategy_report(tally, DECISIONS)["question_evidence_in_window"] == 0.75
    assert strategy_report(Tally(), DECISIONS)["question_evidence_in_window"] is None


def test_evidence_share_uncached_tokens_and_a_baselines_settings_are_reported() -> None:
    tally = Tally(
        turns=[Usage(input_tokens=30, cache_read_input_tokens=170)],
        maintenance=[("compaction", Usage(input_tokens=1000, cache_read_input_tokens=50))],
        evidence_tokens=[40, 200],
        details={"edit": "clear_tool_uses_20250919", "keep_tool_uses": 3},
    )
    r = strategy_report(tally, DECISIONS)
    assert r["evidence_tokens"] == 40 and r["evidence_share_of_input"] == 0.2
    assert r["uncached_tokens"] == 1030, "maintenance calls' uncached input counts too"
    assert r["input_tokens"] == 30, "input_tokens stays the turns' own"
    assert r["settings"] == {"edit": "clear_tool_uses_20250919", "keep_tool_uses": 3}
    bare = strategy_report(Tally(), DECISIONS)
    assert bare["evidence_share_of_input"] == 0.0 and "settings" not in bare


def test_the_providers_own_context_management_counts_as_a_baseline() -> None:
    assert {
        "anthropic_clear_tool_uses",
        "anthropic_compaction",
        "openai_compaction",
    } <= set(BASELINES)


def test_a_request_that_read_less_than_the_cache_held_is_reported() -> None:
    r = strategy_report(Tally(missed=[2, 900, 1]), DECISIONS)
    assert (r["cached_prefix_missed_calls"], r["cached_prefix_missed_tokens"]) == (2, 900)
    assert r["cached_prefix_unread_calls"] == 1
    clean = strategy_report(Tally(), DECISIONS)
    assert (clean["cached_prefix_missed_calls"], clean["cached_prefix_missed_tokens"]) == (0, 0)
