"""No import cycles in ``wakeful/``: every module can be read (and loaded) on its own floor.

Builds the graph of module-level imports with ``ast``: top-level ``import`` and ``from ...
import`` statements, including those inside top-level ``try``/``if``/``with`` blocks and
class bodies (they run at import time). An import inside a function is not an edge: it runs
when called, which is the standard way to break a load-order cycle. Imports under ``if
TYPE_CHECKING:`` are not edges either, except for the compiler, whose passes must be
readable alone even by their types: the data they share sits below them (second test).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.source import parse_file

ROOT = Path(__file__).resolve().parents[1] / "wakeful"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _imports(body: list[ast.stmt], type_only: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    """Import statements run when the module loads (plus ``TYPE_CHECKING`` ones if asked)."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            if type_only or not _is_type_checking(node.test):
                yield from _imports(node.body, type_only)
            yield from _imports(node.orelse, type_only)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                yield from _imports(block, type_only)
            for handler in node.handlers:
                yield from _imports(handler.body, type_only)
        elif isinstance(node, ast.With | ast.ClassDef):
            yield from _imports(node.body, type_only)


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """The package's modules an import statement loads (names outside it are dropped)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        source = ".".join([*base, node.module] if node.module else base)
    else:
        source = node.module or ""
    # ``from pkg import sub`` imports the submodule; any other name comes from pkg itself.
    return [f"{source}.{alias.name}" for alias in node.names] + [source]


def graph(type_only: bool = False, within: str = "wakeful") -> dict[str, set[str]]:
    modules = _modules()
    edges: dict[str, set[str]] = {}
    for name, path in modules.items():
        if name != within and not name.startswith(within + "."):
            continue
        tree = parse_file(path)
        out: set[str] = set()
        for node in _imports(tree.body, type_only):
            targets = _targets(node, name, path.name == "__init__.py")
            if isinstance(node, ast.ImportFrom):
                subs = [t for t in targets[:-1] if t in modules]
                plain = len(subs) < len(targets) - 1
                targets = subs + ([targets[-1]] if plain else [])
            out.update(t for t in targets if t in modules and t != name)
        edges[name] = out
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = []
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work.append((root, iter(sorted(edges.get(root, ())))))
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in edges:
                    continue
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def _report(found: list[list[str]]) -> str:
    return "import cycles (each line one strongly connected component):\n" + "\n".join(
        "  " + " <-> ".join(component) for component in found
    )


def test_cycles_finds_a_knot() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert cycles(edges) == [["a", "b", "c"]]


def test_no_import_cycle_in_the_package() -> None:
    found = cycles(graph())
    assert not found, _report(found)


def test_no_cycle_in_the_compiler_even_by_types() -> None:
    """The passes' shared data (facts, work, the partition's state, streams) imports no
    pass, so each pass reads alone, its type annotations included."""
    found = cycles(graph(type_only=True, within="wakeful.compiler"))
    assert not found, _report(found)
