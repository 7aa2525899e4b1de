"""``wakeful bench compile`` runs end to end on a small history: every figure it reports is
there, in wall-clock and CPU time, and its own checks (new blocks and warm compiles give
the cold output byte for byte) pass."""

from __future__ import annotations

from benchmarks import compile_bench


def test_the_compile_bench_reports_wall_and_cpu_figures_for_each_size() -> None:
    report = compile_bench.run(sizes=(100,), log=lambda _: None, rounds=5)
    (row,) = report["sizes"]
    assert row["blocks"] == 100
    for key in (
        "p50_ms",
        "fresh_blocks_p50_ms",
        "warm_p50_ms",
        "cold_p50_ms",
        "cpu_p50_ms",
        "fresh_blocks_cpu_p50_ms",
        "warm_cpu_p50_ms",
    ):
        assert row[key] > 0, key
    base = report["baseline"]["100"]
    assert base["p50_ms"] > 0 and base["cpu_p50_ms"] > 0
    assert row["cpu_ratio"] > 0 and row["fresh_cpu_ratio"] > 0
