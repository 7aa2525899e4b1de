"""The README's offline window test (``MemoryStore`` and ``compile_for``), run as a user
would: the README's ``triage_agents.py`` and this test, saved as written in a fresh folder,
run by pytest in a subprocess (it needs no server)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def _block_after(text: str, marker: str) -> str:
    return re.findall(r"```python\n(.*?)```", text[text.index(marker) :], flags=re.S)[0]


def test_the_readme_window_test_passes_as_written(tmp_path: Path) -> None:
    text = README.read_text(encoding="utf-8")
    (tmp_path / "triage_agents.py").write_text(
        _block_after(text, "Save this as `triage_agents.py`:"), encoding="utf-8"
    )
    (tmp_path / "test_triage_window.py").write_text(
        _block_after(text, "**See the window without any server**"), encoding="utf-8"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_triage_window.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout, done.stdout
