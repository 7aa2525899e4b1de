"""``wakeful bench cli``: one JSON object with the start-up of ``wakeful --help`` and the
import of the command line, measured in child processes (the figures are reported, never
asserted), and a bad ``--runs`` is one line and exit 2."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from wakeful.cli.main import app


def test_bench_cli_reports_help_start_up_as_one_json_object() -> None:
    result = CliRunner().invoke(app, ["bench", "cli", "--json", "--runs", "1"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["command"] == "wakeful --help" and report["runs"] == 1
    for key in ("help_wall_ms_p50", "help_wall_ms_min", "help_cpu_ms_p50", "import_ms_p50"):
        assert isinstance(report[key], float) and report[key] > 0, key
    assert report["heavy_loaded"] == []


def test_bench_cli_refuses_runs_below_one() -> None:
    result = CliRunner().invoke(app, ["bench", "cli", "--runs", "0"])
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: --runs 0 must be at least 1"
