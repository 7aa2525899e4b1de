"""The installed package holds the runtime: its wheel, built from this checkout, carries no
benchmark, no dataset code, and the provider simulator only inside ``wakeful.testing``."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_wheel_holds_the_runtime_only(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("wakeful-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    code = [n for n in names if n.endswith(".py")]
    assert code and all(n.startswith("wakeful/") for n in code), [
        n for n in code if not n.startswith("wakeful/")
    ]
    assert [n for n in names if "locomo" in n.lower() or "bench" in n] == ["wakeful/cli/bench.py"]
    simulator = [n for n in code if "simulator" in n]
    assert simulator and all(n.startswith("wakeful/testing/") for n in simulator), simulator
    assert "wakeful/testing/__init__.py" in names
    assert "wakeful-0.1.0.dist-info/licenses/LICENSE" in names
    _check_dependencies(zipfile.ZipFile(wheel).read("wakeful-0.1.0.dist-info/METADATA").decode())


def _check_dependencies(metadata: str) -> None:
    """The HTTP servers' packages and psutil come with extras, never with the core."""
    field = "Requires-Dist: "
    requires = [line[len(field) :] for line in metadata.splitlines() if line.startswith(field)]
    core = {_name(r) for r in requires if "; extra ==" not in r}
    assert "snowballstemmer" in core and "temporalio" in core, core
    assert not {"fastapi", "uvicorn", "psutil"} & core, core
    extra_of = {
        _name(r): r.split("; extra ==")[1].strip(" '\"") for r in requires if "; extra ==" in r
    }
    assert (extra_of["fastapi"], extra_of["uvicorn"], extra_of["psutil"]) == (
        "server",
        "server",
        "embedded",
    )
    assert (extra_of["tree-sitter"], extra_of["tree-sitter-go"]) == ("code", "code")
    assert not {"tree-sitter", "tree-sitter-go"} & core, core
    assert 'wakeful[code,embedded,otlp,pdf,semantic,server]; extra == "dev"' in requires  # all


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower()
