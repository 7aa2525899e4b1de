"""The orchestration modules' public names: listed in ``__all__``, sorted, and present."""

from __future__ import annotations

import pytest

from tests.ops.module_exports import listed_exports
from tests.source import parse_file

MODULES = (
    "wakeful.workflows.agent",
    "wakeful.workflows.cache",
    "wakeful.workflows.child",
    "wakeful.workflows.cycle",
    "wakeful.workflows.pacing",
    "wakeful.workflows.retries",
    "wakeful.workflows.scheduled",
    "wakeful.workflows.sessions",
    "wakeful.workflows.state",
    "wakeful.activities.child",
    "wakeful.activities.sessions",
    "wakeful.activities.snapshot_hash",
    "wakeful.worker.schedules",
    "benchmarks.fleet_bench",
    "benchmarks.history_bench",
    "benchmarks.live_stack",
)


@pytest.mark.parametrize("module", MODULES)
def test_all_is_sorted_and_resolves(module: str) -> None:
    _, names = listed_exports(module)  # every listed name present
    assert names == sorted(names, key=lambda n: (not n.isupper(), n))


def test_pacing_imports_nothing_but_pydantic() -> None:
    """The pure pricing function must stay importable anywhere (no Temporal, no I/O)."""
    import ast
    from pathlib import Path

    import wakeful.workflows.pacing as pacing

    tree = parse_file(Path(pacing.__file__))
    imported = {
        (n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
    } | {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert imported <= {"__future__", "math", "datetime", "typing", "pydantic"}
