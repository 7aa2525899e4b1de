"""The import rules ARCHITECTURE.md states: a floor never imports a floor above it.

Walks every module of ``wakeful/`` with ``ast`` (imports inside functions count too: a lazy
import is still a dependency) and checks each ``wakeful.*`` import against the rules.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.source import parse_file

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "wakeful"
TOP = {"cli", "demo", "testing"}
# package -> the wakeful packages it must never import
FORBIDDEN: dict[str, set[str]] = {
    "workflows": {"activities", "substrate", "worker", "telemetry", *TOP},
    "activities": {"worker", *TOP},
    "substrate": {"activities", "workflows", "worker", *TOP},
    "providers": {"activities", "workflows", "substrate", "worker", *TOP},
    "consolidation": {"activities", "substrate", "worker", *TOP},
    "worker": TOP,
    "agents": {"activities", "workflows", "substrate", "worker", *TOP},
    "contracts": {"activities", "substrate", "worker", *TOP},
}
# the only modules of a forbidden-in-part package a floor may import
ONLY: dict[tuple[str, str], set[str]] = {("workflows", "providers"): {"wakeful.providers.pricing"}}


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = parse_file(path)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return [(line, name) for line, name in found if name.startswith("wakeful.")]


def violations(package: Path = PACKAGE) -> list[str]:
    out: list[str] = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package)
        floor = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        banned = FORBIDDEN.get(floor, set()) | (TOP - {"cli"} if floor not in TOP else set())
        for line, name in _imports(path):
            target = name.split(".")[1]
            if target == floor:
                continue
            only = ONLY.get((floor, target))
            if only is not None and not any(name == m or name.startswith(m + ".") for m in only):
                out.append(f"wakeful/{rel}:{line} imports {name} (only {sorted(only)} allowed)")
            elif target in banned:
                out.append(f"wakeful/{rel}:{line} imports {name} ({floor} is below {target})")
    return sorted(out)


def test_no_floor_imports_one_above_it() -> None:
    assert violations() == []


def test_the_rules_catch_an_upward_import(tmp_path: Path) -> None:
    fake = tmp_path / "wakeful"
    (fake / "workflows").mkdir(parents=True)
    (fake / "workflows" / "bad.py").write_text(
        "def f():\n    from wakeful.substrate.store import Store\n"
        "from wakeful.providers.openai import OpenAIProvider\n"
        "from wakeful.providers.pricing import price_for\n"
    )
    assert violations(fake) == [
        "wakeful/workflows/bad.py:2 imports wakeful.substrate.store (workflows is below substrate)",
        "wakeful/workflows/bad.py:3 imports wakeful.providers.openai (only "
        "['wakeful.providers.pricing'] allowed)",
    ]


def test_the_architecture_document_links_only_files_that_exist() -> None:
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    links = [t.split(")")[0] for t in text.split("](")[1:]]
    assert links and all((ROOT / link).exists() for link in links), [
        link for link in links if not (ROOT / link).exists()
    ]
