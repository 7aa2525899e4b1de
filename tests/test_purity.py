"""The compiler and the workflows must stay pure: no I/O libraries, no clock, no randomness.

Walks every module with ``ast``. Workflows may import temporalio and use ``workflow.now()``
(they are replayed deterministically); the compiler may not import temporalio at all.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.source import parse_file

ROOT = Path(__file__).resolve().parents[1] / "wakeful"
BANNED_IMPORTS = {
    "sqlalchemy",
    "psycopg",
    "qdrant_client",
    "qdrant_edge",
    "anthropic",
    "openai",
    "httpx",
    "requests",
    "temporalio",
    "socket",
    "random",
}
BANNED_CALLS = {
    ("datetime", "now"),
    ("datetime", "utcnow"),
    ("datetime", "today"),
    ("date", "today"),
    ("time", "time"),
    ("time", "time_ns"),
    ("time", "monotonic"),
    ("time", "perf_counter"),
    ("uuid", "uuid1"),
    ("uuid", "uuid4"),
    ("os", "urandom"),
}
PACKAGES = {"compiler": set(), "workflows": {"temporalio"}}


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def problems(path: Path, allowed: set[str]) -> list[str]:
    tree = parse_file(path)
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            top = name.split(".")[0]
            if top in BANNED_IMPORTS and top not in allowed:
                found.append(f"{path.name}:{node.lineno} imports {name}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            owner_name = (
                owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
            )
            if (owner_name, node.func.attr) in BANNED_CALLS:
                found.append(f"{path.name}:{node.lineno} calls {owner_name}.{node.func.attr}()")
            if owner_name == "random":
                found.append(f"{path.name}:{node.lineno} calls random.{node.func.attr}()")
    return found


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_package_is_pure(package: str) -> None:
    assert (ROOT / package).is_dir()
    found = [p for path in _modules(package) for p in problems(path, PACKAGES[package])]
    assert found == []


def test_the_checker_catches_what_it_should(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import httpx\nfrom sqlalchemy import select\nimport random\n"
        "from datetime import datetime\ndatetime.now()\nimport time\ntime.time()\n"
        "import uuid\nuuid.uuid4()\nrandom.random()\n"
    )
    found = problems(bad, set())
    assert len(found) == 7
    assert problems(bad, {"httpx", "sqlalchemy", "random"}) == [
        f for f in found if "imports" not in f
    ]
