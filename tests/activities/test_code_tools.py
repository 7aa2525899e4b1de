"""Raw code by file, symbol or line range (``wakeful.code_tools``) with the file's version,
and the outlines it and the code map read (``wakeful.code_outline``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from wakeful.code_outline import file_version, outline
from wakeful.code_tools import read_section
from wakeful.files import FileToolError
from wakeful.substrate.code_map import CodeMap

SOURCE = '''import functools


class Vault:
    """Keys."""

    @functools.cache
    def rotate(self, key: str, *, force: bool = False) -> None:
        pass

    async def fetch(self) -> bytes:
        return b""


def rotate() -> int:
    return 1
'''


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "vault.py").write_text(SOURCE, encoding="utf-8")
    two = "class A:\n    def run(self): ...\n\n\nclass B:\n    def run(self): ...\n"
    (tmp_path / "two.py").write_text(two, encoding="utf-8")  # which run? name the class
    return tmp_path


def test_a_symbol_is_read_with_its_decorators_and_the_files_version(work: Path) -> None:
    got = read_section(str(work), "pkg/vault.py::Vault.rotate")
    version = file_version((work / "pkg" / "vault.py").read_bytes())
    head, *body = got.splitlines()
    assert head.startswith(f"pkg/vault.py::Vault.rotate lines 7-9 of 16 [version {version}, ")
    assert body[0] == "7|     @functools.cache"
    assert body[-1] == "9|         pass"
    # The same by the symbol argument; a method's own name is enough when it is unique.
    assert read_section(str(work), "pkg/vault.py", symbol="fetch").startswith(
        "pkg/vault.py::Vault.fetch lines 11-12 of 16"
    )


def test_a_line_range_and_a_stale_version_are_named(work: Path) -> None:
    before = file_version((work / "pkg" / "vault.py").read_bytes())
    got = read_section(str(work), "pkg/vault.py", lines="15-99", version=before)
    assert got.splitlines()[1:] == [
        f"unchanged since version {before}",
        "15| def rotate() -> int:",
        "16|     return 1",
    ]
    (work / "pkg" / "vault.py").write_text(SOURCE.replace("-> int", "-> str"), encoding="utf-8")
    again = read_section(str(work), "pkg/vault.py", lines="15", version=before)
    assert again.splitlines()[1] == (
        f"CHANGED since version {before}: earlier reads of this file are stale"
    )
    assert again.splitlines()[2] == "15| def rotate() -> str:"


@pytest.mark.parametrize(
    ("path", "kw", "says"),
    [
        ("pkg/vault.py::Nope", {}, "'pkg/vault.py' has no symbol 'Nope'; it has: Vault, "),
        ("two.py::run", {}, "'two.py' has no symbol 'run'; it has: A, A.run, B, B.run"),
        ("pkg/vault.py", {"lines": "x-3"}, "lines 'x-3' is not a range; give e.g. '10-40'"),
        ("pkg/vault.py", {"lines": "40-50"}, "has 16 lines; lines '40-50' starts past its end"),
        ("pkg/vault.py::Vault", {"lines": "1-2"}, "give a symbol or a line range, not both"),
        ("../etc/passwd", {}, "outside the agent's working directory"),
        ("pkg/missing.py", {}, "does not exist"),
    ],
)
def test_bad_input_is_one_line_naming_it(
    work: Path, path: str, kw: dict[str, str], says: str
) -> None:
    with pytest.raises(FileToolError) as err:
        read_section(str(work), path, **kw)  # type: ignore[arg-type]
    assert says in str(err.value) and "\n" not in str(err.value)


def test_a_module_level_function_wins_its_exact_name(work: Path) -> None:
    (work / "one.py").write_text("def rotate():\n    pass\n", encoding="utf-8")
    assert read_section(str(work), "one.py::rotate").startswith("one.py::rotate lines 1-2 of 2")


def test_an_unchanged_file_is_not_parsed_again_even_when_touched(work: Path) -> None:
    code_map = CodeMap(str(work))
    first = code_map.text()
    assert code_map.parses == 2
    path = work / "pkg" / "vault.py"
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # same bytes, newer
    assert code_map.text() == first and code_map.parses == 2
    path.write_text(SOURCE + "\n\ndef more() -> None:\n    pass\n", encoding="utf-8")
    assert "def more() -> None  L19-20" in code_map.text() and code_map.parses == 3


def test_other_languages_are_outlined_with_the_code_extra() -> None:
    pytest.importorskip("tree_sitter_go")
    pytest.importorskip("tree_sitter_typescript")
    go = (
        "package main\n\ntype Server struct{}\n\n"
        "func (s *Server) Start(port int) error {\n\treturn nil\n}\n"
    )
    assert [(s.qualname, s.signature, s.start, s.end) for s in outline(".go", go) or []] == [
        ("Server", "type Server struct", 3, 3),
        ("Server.Start", "func (s *Server) Start(port int) error", 5, 7),
    ]
    ts = "export class Box {\n  area(w: number): number { return w; }\n}\n"
    assert [(s.qualname, s.signature) for s in outline(".ts", ts) or []] == [
        ("Box", "class Box"),
        ("Box.area", "area(w: number): number"),
    ]
    assert outline(".rs", "fn main() {}") is None
