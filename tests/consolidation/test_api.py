"""The consolidation package stays pure, its public API is what ``__all__`` says, and the
CLI refuses bad input before touching a server."""

from __future__ import annotations

import inspect
from pathlib import Path

from typer.testing import CliRunner

import wakeful.consolidation as consolidation
from tests.test_purity import ROOT, problems
from wakeful.cli.main import app


def test_the_rules_do_no_io_and_read_no_clock() -> None:
    modules = sorted((ROOT / "consolidation").glob("*.py"))
    pure = [p for p in modules if p.name != "schedule.py"]  # the one module with a client
    assert len(pure) >= 10
    found = [f for path in pure for f in problems(path, set())]
    assert found == []
    assert problems(ROOT / "consolidation" / "schedule.py", set())  # the checker does look


def test_all_lists_the_public_api() -> None:
    public = {
        n
        for n in dir(consolidation)
        if not n.startswith("_") and not inspect.ismodule(getattr(consolidation, n))
    }
    assert set(consolidation.__all__) == public


def test_a_bad_interval_is_refused_with_its_fix(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["consolidate", "ops", "--schedule", "--every", "1x"],
        env={"WAKEFUL_STATE_DIR": str(tmp_path)},
    )
    assert result.exit_code == 2
    assert "duration '1x' must look like 90s, 15m, 2h, 1d or 1h30m" in result.output
    assert list(tmp_path.iterdir()) == []  # no embedded server was started
