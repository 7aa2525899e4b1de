"""``wakeful bench recall --folds``: leave-one-conversation-out scores, where each held-out
conversation is scored with the retrieval settings chosen on the others."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from benchmarks import recall_bench
from benchmarks.recall_bench import _Tally, fold_report
from tests.bench.recall_folds_fixture import conversations
from wakeful.cli.main import app


def _tally(found: int, gold: int = 10) -> _Tally:
    """A conversation's tally: ``found`` of ``gold`` gold ids at budget 1000, category 1."""
    tally = _Tally()
    tally.question("1", ["x"] * gold)
    tally.add("1000", "1", ["x"] * gold, {"x"} if found else set())
    tally.found[("1000", "1")] = found
    return tally


def test_each_fold_is_scored_with_the_setting_chosen_on_the_other_conversations() -> None:
    # Setting 0 is best on a and b, setting 1 only on c (by a wider margin there).
    tallies = [
        [_tally(8), _tally(8), _tally(2)],
        [_tally(6), _tally(6), _tally(9)],
    ]
    grid = [{}, {"smoothing": 0.0}]
    report = fold_report(["a", "b", "c"], tallies, grid, ["1000"])
    chosen = {f["held_out"]: f["chosen"] for f in report["per_fold"]}
    # Holding out a: b and c give 0.5 for setting 0, 0.75 for setting 1.
    assert chosen == {"a": {"smoothing": 0.0}, "b": {"smoothing": 0.0}, "c": {}}
    scores = {f["held_out"]: f["budgets"]["1000"] for f in report["per_fold"]}
    assert scores == {"a": 0.6, "b": 0.6, "c": 0.2}  # never the held-out one's own best
    assert report["per_fold"][2]["by_category"] == {"1000": {"1": 0.2}}
    budget = report["budgets"]["1000"]
    assert (budget["mean"], budget["worst"], budget["worst_fold"]) == (0.4667, 0.2, "c")
    assert budget["pooled"]["evidence_in_window"] == round(14 / 30, 4)
    assert report["tuned"] == ["smoothing"] and report["fixed_configuration"] is False


def test_ties_keep_the_earlier_setting() -> None:
    tallies = [[_tally(5), _tally(5)], [_tally(5), _tally(5)]]
    report = fold_report(["a", "b"], tallies, [{}, {"neighbour_lag": 0}], ["1000"])
    assert [f["chosen"] for f in report["per_fold"]] == [{}, {}]


def test_folds_on_a_locomo_file(tmp_path: Path) -> None:
    path = tmp_path / "three.json"
    path.write_text(json.dumps(conversations()), encoding="utf-8")
    grid = [{}, {"neighbour_lag": 0}]
    report = recall_bench.run(path, [150, 2000], folds=True, grid=grid)
    folds = report["folds"]
    assert [f["held_out"] for f in folds["per_fold"]] == ["folds-a", "folds-b", "folds-c"]
    assert all(f["chosen"] in grid and f["questions"] == 3 for f in folds["per_fold"])
    for budget in ("150", "2000"):
        scores = [f["budgets"][budget] for f in folds["per_fold"]]
        assert folds["budgets"][budget]["worst"] == min(scores)
        assert folds["budgets"][budget]["mean"] == round(sum(scores) / 3, 4)
    # Every conversation fits in 2,000 tokens: each fold finds all its evidence.
    assert folds["budgets"]["2000"]["mean"] == 1.0
    assert set(folds["budgets"]["2000"]["pooled"]["by_category"]) == {"1", "2", "3", "4"}
    # The plain numbers are the default setting's (the grid's first), as without --folds.
    plain = recall_bench.run(path, [150, 2000])
    assert "folds" not in plain
    assert report["budgets"] == plain["budgets"] and report["baselines"] == plain["baselines"]


def test_one_setting_scores_each_conversation_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "three.json"
    path.write_text(json.dumps(conversations()), encoding="utf-8")
    args = ["bench", "recall", "--json", "--dataset", str(path), "--budget", "150", "--folds"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    folds = json.loads(result.stdout)["folds"]
    assert folds["grid"] == [dict(g) for g in recall_bench.FOLD_GRID]
    fixed = recall_bench.run(path, [150], folds=True, grid=[{}])
    assert fixed["folds"]["fixed_configuration"] is True
    # Nothing to tune: pooled over the folds is the whole file's score.
    assert fixed["folds"]["budgets"]["150"]["pooled"] == fixed["budgets"]["150"]


def test_conversations_picks_samples_by_id(tmp_path: Path) -> None:
    path = tmp_path / "three.json"
    path.write_text(json.dumps(conversations()), encoding="utf-8")
    args = ["bench", "recall", "--json", "--dataset", str(path), "--budget", "2000", "--folds"]
    result = CliRunner().invoke(app, [*args, "--conversations", "folds-c,folds-a"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    held = [f["held_out"] for f in report["folds"]["per_fold"]]
    assert held == ["folds-a", "folds-c"] and report["n"] == 6  # file order, three each
    missing = CliRunner().invoke(app, [*args, "--conversations", "folds-a,conv-99"])
    assert missing.exit_code != 0
    assert "no conversation conv-99 in the dataset" in missing.output
