"""``wakeful bench fleet`` on a small fleet, on the session's Temporal dev server, Postgres and
simulator: the worker runs as many model calls at once as its activity threads allow (model
calls take a slot each), and no more; every wake completes."""

from __future__ import annotations

import os

import pytest
from temporalio.testing import WorkflowEnvironment

from benchmarks import fleet_bench
from benchmarks.live_stack import LiveStack
from wakeful.substrate.store import Store
from wakeful.testing.servers import EmbeddedPostgres
from wakeful.testing.simulator.server import SimulatorServer


@pytest.fixture(scope="module")
def live(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    postgres: EmbeddedPostgres,
    sim: SimulatorServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> LiveStack:
    """The bench's live stack made of the session's servers: each run keeps to a tenant (its
    simulator key too) and a task queue of its own, and its workers are processes of their
    own, so the in-process simulator serves them as a process of its own would."""
    return LiveStack(
        client=temporal_dev.client,
        store=store,
        sim_url=sim.base_url,
        sim_pid=os.getpid(),
        postgres_data=postgres.data_dir,
        root=tmp_path_factory.mktemp("fleet"),
        database_url=postgres.url,
    )


async def test_model_calls_in_flight_follow_the_workers_activity_threads(live: LiveStack) -> None:
    report = await fleet_bench.run_on(live, agents=3, latency_s=1.0, threads=(1, 3))
    one, three = report["runs"]["threads_1"], report["runs"]["threads_3"]
    assert one["model_calls_in_flight_max"] == 1
    assert three["model_calls_in_flight_max"] == 3
    for run in (one, three):
        assert run["agents"] == 3 and run["ideal_s"] == 2.0
        assert run["wake_max_s"] <= run["wall_s"]
    # One thread: six calls of a second each, one after the other.
    assert one["wall_s"] >= 6.0


async def test_a_fleet_of_worker_processes_serves_one_burst_and_counts_calls_across_them(
    live: LiveStack,
) -> None:
    report = await fleet_bench.run_on(live, agents=3, latency_s=1.0, threads=(1,), workers=(3,))
    run = report["runs"]["workers_3_threads_1"]
    assert run["workers"] == 3 and run["agents"] == 3
    # Three workers of one slot each: at most three calls at once, whichever takes which.
    assert 1 <= run["model_calls_in_flight_max"] <= 3
    assert run["again"]["wake_max_s"] <= run["again"]["wall_s"]


def test_calls_in_flight_are_counted_across_workers() -> None:
    spans = [(0.0, 2.0), (1.0, 3.0), (2.0, 4.0), (5.0, 6.0)]
    # One call's end at another's start closes first: two at once, never three.
    assert fleet_bench.peak_in_flight(spans) == 2
    assert fleet_bench.peak_in_flight([]) == 0
