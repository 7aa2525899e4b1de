"""``wakeful bench recall --embedder``: the benchmark indexes and retrieves with the embedder
a worker would build for that WAKEFUL_EMBEDDER value (hybrid retrieval for a dense one)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tests.substrate.test_indexing_bench import _sample
from wakeful.cli.main import app
from wakeful.substrate.embedders import HashingEmbedder, WordLlamaEmbedder


def test_recall_bench_runs_with_the_embedder_named(tmp_path: Path) -> None:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps([_sample()]), encoding="utf-8")
    args = ["bench", "recall", "--json", "--dataset", str(path), "--budget", "2000"]
    default = CliRunner().invoke(app, args)
    assert default.exit_code == 0, default.output
    report = json.loads(default.stdout)
    assert (report["embedder"], report["retrieval_mode"]) == (HashingEmbedder().name, "sparse")
    semantic = CliRunner().invoke(app, [*args, "--embedder", "wordllama"])
    assert semantic.exit_code == 0, semantic.output
    report = json.loads(semantic.stdout)
    assert (report["embedder"], report["retrieval_mode"]) == (WordLlamaEmbedder().name, "hybrid")
    assert report["budgets"]["2000"]["evidence_in_window"] == 1.0  # the whole conversation fits
    bad = CliRunner().invoke(app, [*args, "--embedder", "word2vec"])
    assert bad.exit_code == 2 and "--embedder 'word2vec'" in bad.stderr, bad.output
    assert len(bad.stderr.strip().splitlines()) == 1
