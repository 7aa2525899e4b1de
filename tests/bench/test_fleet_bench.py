"""``wakeful bench fleet`` on a small fleet: the worker runs as many model calls at once as
its activity threads allow (model calls take a slot each), and no more; every wake
completes."""

from __future__ import annotations

from benchmarks import fleet_bench


def test_model_calls_in_flight_follow_the_workers_activity_threads() -> None:
    report = fleet_bench.run(agents=3, latency_s=1.0, threads=(1, 3))
    one, three = report["runs"]["threads_1"], report["runs"]["threads_3"]
    assert one["model_calls_in_flight_max"] == 1
    assert three["model_calls_in_flight_max"] == 3
    for run in (one, three):
        assert run["agents"] == 3 and run["ideal_s"] == 2.0
        assert run["wake_max_s"] <= run["wall_s"]
    # One thread: six calls of a second each, one after the other.
    assert one["wall_s"] >= 6.0
