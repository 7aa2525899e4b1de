"""The benchmark end to end on two small shapes: the real SDK to the simulator, one JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from benchmarks.cache_bench import run
from wakeful.cli.main import app

DATASET = Path(__file__).resolve().parents[2] / ".." / "shared" / "bench" / "locomo-dev.json"
pytestmark = pytest.mark.skipif(
    not DATASET.is_file(),
    reason=f"no LoCoMo file at {DATASET} (benchmark data, kept outside the repository)",
)

FIELDS = {
    "cost_usd",
    "cost_vs_full_history",
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cache_hit_ratio",
    "written_never_read_tokens",
    "written_never_read_share",
    "load_bearing_kept",
    "load_bearing_missing",
    "load_bearing_held_share",
    "evidence_tokens",
    "evidence_share_of_input",
    "uncached_tokens",
    "cached_prefix_missed_calls",
    "cached_prefix_missed_tokens",
    "cached_prefix_unread_calls",
}
STRATEGIES = {
    "wakeful",
    "full_history",
    "full_history_system",
    "sliding_window",
    "summarize_threshold",
    "anthropic_clear_tool_uses",
    "anthropic_compaction",
    "openai_compaction",
}
CHECKS = {
    "cost_le_cheapest_keeping_facts",
    "cost_le_full_history",
    "written_never_read_share_le_0_15",
    "cache_hit_ratio_ge_0_85",
    "no_request_sent_uncached_past_a_cached_prefix",
}
SHAPES = ("short_chat", "synthetic")


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    lines: list[str] = []
    return run(
        24,
        shapes=SHAPES,
        dataset=DATASET,
        variants=True,
        window_turns=4,
        threshold=12_000,
        log=lines.append,
    )


def test_report_has_the_promised_shape(report: dict[str, Any]) -> None:
    assert report["split"] == "holdout"
    assert report["conversations"] == ["conv-42", "conv-43"]
    assert set(report["shapes"]) == set(report["summary"]) == set(SHAPES)
    assert report["shapes"]["synthetic"]["calls"] == 24
    for name, shape in report["shapes"].items():
        assert {"calls", "wakes", "sessions", "source", "floor", "limit"} <= set(shape), name
        assert set(shape["strategies"]) == STRATEGIES, name
        for strategy, s in shape["strategies"].items():
            assert FIELDS <= set(s), (name, strategy)
            assert s["cost_usd"] > 0 and 0 <= s["cache_hit_ratio"] <= 1
            assert 0 <= s["written_never_read_share"] <= 1
        assert set(shape["checks"]) == CHECKS
    assert set(report["shapes"]["synthetic"]["variants"]) == {
        "wakeful_tuned_budget",
        "wakeful_greedy_eviction",
        "wakeful_evidence_before_history",
    }
    assert report["shapes"]["short_chat"]["variants"] == {}, "variants run on synthetic only"
    json.dumps(report)


def test_numbers_are_consistent(report: dict[str, Any]) -> None:
    for name, shape in report["shapes"].items():
        s = shape["strategies"]
        calls = shape["calls"]
        for r in s.values():
            total = r["input_tokens"] + r["cache_read_tokens"] + r["cache_write_tokens"]
            assert r["cache_hit_ratio"] == round(r["cache_read_tokens"] / total, 4)
            assert r["mean_window_tokens"] == round(total / calls)
            assert r["cost_vs_full_history"] == pytest.approx(
                r["cost_usd"] / s["full_history"]["cost_usd"], rel=0.01
            )
        full = s["full_history"]
        assert full["cost_vs_full_history"] == 1.0
        # Full history has no maintenance calls: all it wrote is in the turns' writes, and
        # at least its last call's write is never read.
        assert 0 < full["written_never_read_tokens"] <= full["cache_write_tokens"]
        outputs = [r["output_tokens"] for r in s.values()]
        assert max(outputs) - min(outputs) <= 0.02 * max(outputs), "same scripted replies"
        assert full["load_bearing_kept"] is True, "nothing ever leaves the full history"
        assert set(full["load_bearing_held_share"].values()) == {1.0}
        assert all(r["question_evidence_in_window"] is None for r in s.values()), "no questions"
        assert s["wakeful"]["load_bearing_kept"] is True, (name, "the registry keeps them")
        assert s["sliding_window"]["load_bearing_kept"] is False, (name, "4 turns cannot")
        assert min(s["sliding_window"]["load_bearing_held_share"].values()) < 1
        assert shape["floor"]["cost_usd"] < min(r["cost_usd"] for r in s.values())
        assert shape["limit"]["prefix_cache_hit_ratio"] <= shape["limit"]["cache_hit_ratio"]
        cheapest = shape["cheapest_keeping_facts"]
        keeping = [n for n, r in s.items() if n != "wakeful" and r["load_bearing_kept"]]
        assert cheapest["strategy"] in keeping
        assert cheapest["cost_usd"] == min(s[n]["cost_usd"] for n in keeping)
        checks = shape["checks"]
        assert checks["cost_le_full_history"]["bound"] == full["cost_usd"]
        assert checks["cost_le_cheapest_keeping_facts"]["bound"] == cheapest["cost_usd"]
        for key in ("cost_le_full_history", "cost_le_cheapest_keeping_facts"):
            c = checks[key]
            assert c["value"] == s["wakeful"]["cost_usd"]
            if c["value"] != c["bound"]:  # both are rounded; met compares the exact costs
                assert c["met"] == (c["value"] < c["bound"])
        unread = checks["no_request_sent_uncached_past_a_cached_prefix"]
        assert unread["value"] == s["wakeful"]["cached_prefix_unread_calls"]
        assert unread["met"] == (unread["value"] == 0)
        assert unread["value"] <= s["wakeful"]["cached_prefix_missed_calls"]
        hit = checks["cache_hit_ratio_ge_0_85"]
        assert hit["met"] == (hit["value"] >= 0.85 if calls > 20 else None)
    assert report["shapes"]["synthetic"]["strategies"]["summarize_threshold"]["maintenance_calls"]


def test_cli_prints_exactly_one_json_object() -> None:
    result = CliRunner().invoke(
        app,
        ["bench", "cache", "--shape", "synthetic", "--turns", "12", "--no-variants", "--json"],
    )
    assert result.exit_code == 0, result.output
    parsed = json.loads(result.stdout)
    assert list(parsed["shapes"]) == ["synthetic"]
    assert parsed["shapes"]["synthetic"]["calls"] == 12
    assert parsed["shapes"]["synthetic"]["variants"] == {}


def test_cli_names_a_bad_split_in_one_line() -> None:
    result = CliRunner().invoke(app, ["bench", "cache", "--split", "test", "--json"])
    assert result.exit_code != 0
    assert "unknown split 'test'" in result.output
    assert result.stdout.strip().count("\n") <= 1
