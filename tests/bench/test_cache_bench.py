"""The benchmark end to end on a short session: the real SDK to the simulator, one JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from wakeful.bench.cache_bench import run
from wakeful.cli.main import app

FIELDS = {
    "cost_usd",
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cache_hit_ratio",
    "load_bearing_kept",
}
STRATEGIES = {"wakeful", "full_history", "sliding_window", "summarize_threshold"}


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    lines: list[str] = []
    return run(24, variants=True, window_turns=4, threshold=12_000, log=lines.append)


def test_report_has_the_promised_shape(report: dict[str, Any]) -> None:
    assert report["turns"] == 24
    assert set(report["strategies"]) == STRATEGIES
    for name, s in report["strategies"].items():
        assert FIELDS <= set(s), name
        assert s["cost_usd"] > 0 and 0 <= s["cache_hit_ratio"] <= 1
    assert 0 < report["limit"]["cache_hit_ratio"] <= 1
    assert set(report["targets"]) == {
        "cost_vs_full_history",
        "cost_vs_sliding_window",
        "hit_ratio_vs_limit",
        "load_bearing_kept",
    }
    assert set(report["variants"]) == {
        "wakeful_tuned_budget",
        "wakeful_greedy_eviction",
        "wakeful_evidence_before_history",
    }
    json.dumps(report)


def test_numbers_are_consistent(report: dict[str, Any]) -> None:
    s = report["strategies"]
    for r in s.values():
        total = r["input_tokens"] + r["cache_read_tokens"] + r["cache_write_tokens"]
        assert r["cache_hit_ratio"] == round(r["cache_read_tokens"] / total, 4)
        assert r["mean_window_tokens"] == round(total / 24)
    outputs = [r["output_tokens"] for r in s.values()]
    assert max(outputs) - min(outputs) <= 0.02 * max(outputs), "same scripted replies"
    w, full = s["wakeful"], s["full_history"]
    assert report["targets"]["cost_vs_full_history"]["value"] == round(
        w["cost_usd"] / full["cost_usd"], 4
    )
    assert full["load_bearing_kept"] is True, "nothing ever leaves the full history"
    assert s["sliding_window"]["load_bearing_kept"] is False, "4 turns cannot hold them"
    assert w["load_bearing_kept"] is True, "the registry keeps them"
    assert report["floor"]["cost_usd"] < min(r["cost_usd"] for r in s.values())
    assert s["summarize_threshold"]["maintenance_calls"] >= 1
    assert report["limit"]["prefix_cache_hit_ratio"] <= report["limit"]["cache_hit_ratio"]


def test_cli_prints_exactly_one_json_object() -> None:
    result = CliRunner().invoke(app, ["bench", "cache", "--turns", "12", "--no-variants", "--json"])
    assert result.exit_code == 0, result.output
    parsed = json.loads(result.stdout)
    assert parsed["turns"] == 12 and parsed["variants"] == {}
