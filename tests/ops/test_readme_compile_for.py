"""The README's offline window test (``MemoryStore`` and ``compile_for``), run as written
against the README's agent."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

from tests.ops.test_readme_agent import _example

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_window_test_passes_as_written() -> None:
    text = README.read_text(encoding="utf-8")
    start = text.index("**See the window without any server**")
    code = re.findall(r"```python\n(.*?)```", text[start:], flags=re.S)[0]
    assert "from triage_agents import agent\n" in code
    module = ModuleType("test_triage_window")
    module.__dict__["agent"] = _example().agent
    exec(
        compile(code.replace("from triage_agents import agent\n", ""), "README.md", "exec"),
        module.__dict__,
    )
    module.test_triage_sees_the_rollback_rule()
