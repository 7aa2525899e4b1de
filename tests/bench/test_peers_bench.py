"""``wakeful bench peers`` on 3 turns, on the session's Temporal dev server and Postgres:
each of the three systems really ran its conversation (every turn answered, one model
call per turn at the simulator, a history on the Temporal server), and the checks are
there; a bad ``--turns`` from the command line is one line and exit 2."""

from __future__ import annotations

from pathlib import Path

from temporalio.testing import WorkflowEnvironment
from typer.testing import CliRunner

from benchmarks import peers_bench
from tests.bench.locomo_fixture import write_dev_file
from wakeful.cli.main import app
from wakeful.substrate.store import Store

SYSTEMS = ("wakeful", "pydantic_ai", "openai_agents")


async def test_bench_peers_runs_the_conversation_through_all_three_systems(
    temporal_dev: WorkflowEnvironment, store: Store, tmp_path: Path
) -> None:
    # A LoCoMo-shaped dialogue made here: the test needs its shape, not the real data set.
    dataset = write_dev_file(tmp_path / "locomo-dev.json")
    report = await peers_bench.measure(temporal_dev.client, store, turns=3, dataset=dataset)
    assert set(report) == {*SYSTEMS, "checks", "setup"}
    for name in SYSTEMS:
        system = report[name]
        assert "error" not in system, f"{name}: {system.get('error')}"
        assert system["turns"] == 3, name
        assert system["model_calls"] == 3, name
        history = system["history"]
        assert history["total_bytes"] > history["after_turn_1_bytes"] > 0, name
        assert set(history["added_at_turn"]) == {"1", "3"}, name
        assert history["added_at_turn"]["1"] == history["after_turn_1_bytes"], name
        assert 0 < history["largest_payload_bytes"] < history["total_bytes"], name
        assert set(system["time_minus_model_ms"]) == {"p50", "mean", "turn_1", "turn_3"}, name
        assert system["worker_cpu_ms_per_turn"]["whole_run"] > 0, name
    for check in report["checks"].values():
        assert isinstance(check["met"], bool)
    assert report["setup"]["turns"] == 3


def test_bench_peers_refuses_turns_below_one() -> None:
    result = CliRunner().invoke(app, ["bench", "peers", "--turns", "0"])
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: --turns 0 must be at least 1"
