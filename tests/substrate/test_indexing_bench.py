"""The recall and substrate benchmarks on tiny inputs: shapes, malformed ids, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import recall_bench, substrate_bench
from wakeful.errors import UserError


def _sample() -> dict[str, object]:
    turns_1 = [
        ("Ana", "I adopted a grey cat named Pixel last week."),
        ("Ben", "Lovely! How is Pixel settling in?"),
        ("Ana", "She sleeps on the piano all day."),
    ]
    turns_2 = [
        ("Ben", "I ran the Lisbon marathon on Sunday."),
        ("Ana", "Congratulations, what was your time?"),
        ("Ben", "Three hours and forty minutes."),
    ]
    conv: dict[str, object] = {"speaker_a": "Ana", "speaker_b": "Ben"}
    for n, turns in ((1, turns_1), (2, turns_2)):
        conv[f"session_{n}_date_time"] = f"1:00 pm on {n + 3} May, 2023"
        conv[f"session_{n}"] = [
            {"speaker": s, "dia_id": f"D{n}:{i + 1}", "text": t} for i, (s, t) in enumerate(turns)
        ]
    qa = [
        {"question": "What is the name of Ana's cat?", "evidence": ["D1:1"], "category": 4},
        {"question": "Where did Ben run a marathon?", "evidence": ["D:2:1"], "category": 4},
        {"question": "What did they talk about?", "evidence": ["D1:3; D2:3", "D"], "category": 1},
        {"question": "Adversarial with no evidence", "evidence": [], "category": 5},
    ]
    return {"sample_id": "tiny", "conversation": conv, "qa": qa}


def test_recall_bench_reports_every_budget_and_baseline(tmp_path: Path) -> None:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps([_sample()]), encoding="utf-8")
    report = recall_bench.run(path, [300, 2000])
    assert report["n"] == 3  # the question without evidence is not asked
    assert report["gold_ids"] == 4 and report["dropped_gold_ids"] == 1  # the bare "D"
    big = report["budgets"]["2000"]
    assert big["evidence_in_window"] == 1.0  # the whole conversation fits
    assert set(big["by_category"]) == {"1", "4"}
    for name in ("bm25", "recency"):
        assert set(report["baselines"][name]) == {"300", "2000"}
    small = report["budgets"]["300"]["evidence_in_window"]
    assert 0 <= small <= big["evidence_in_window"]


def test_recall_bench_rejects_what_it_cannot_read(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no dataset"):
        recall_bench.run(tmp_path / "missing.json", [1000])
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a list"}', encoding="utf-8")
    with pytest.raises(UserError, match="LoCoMo"):
        recall_bench.run(bad, [1000])


def test_recall_policy_spends_the_budget_under_test() -> None:
    policy = recall_bench.recall_policy(1000)
    assert policy.budget.input_budget == 1000
    assert policy.name == "recall" and policy.ranking.recency_weight == 0


def test_substrate_bench_measures_each_target() -> None:
    report = substrate_bench.run(events=1000, samples=10)
    assert report["append"]["events"] == 1000
    assert report["retrieval"]["chunks"] == report["snapshot"]["events"] > 1000
    assert set(report["met"]) == set(report["targets"]) == set(report["measured"])
    assert report["snapshot"]["p50_ms"] > 0 and report["retrieval"]["retrieve"]["p50_ms"] > 0
