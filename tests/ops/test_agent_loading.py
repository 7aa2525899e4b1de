"""``--agents`` finds agents as a user writes them: a module in the current directory (a
console script does not put it on ``sys.path``), a file path, an Agent or a list of them;
anything else is one line naming what was wrong."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from wakeful.agents import AgentRegistry
from wakeful.cli.agents import load_registry
from wakeful.errors import ConfigError

MODULE = """
from wakeful.agents import Agent, AgentRegistry

helper = Agent(name="helper", instructions="Help.", model="claude-sonnet-4-6")
other = Agent(name="other", instructions="Other.", model="claude-sonnet-4-6")
registry = AgentRegistry([helper])
both = [helper, other]
number = 3


def make() -> AgentRegistry:
    return AgentRegistry([other])
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding ``my_agents_<n>.py``, the current directory, not on sys.path
    (as under the ``wakeful`` console script)."""
    name = f"my_agents_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    return tmp_path / f"{name}.py"


def names(registry: AgentRegistry) -> list[str]:
    return sorted(a.name for a in registry)


def test_a_module_in_the_current_directory_and_a_file_path_load(project: Path) -> None:
    module = project.stem
    assert names(load_registry(f"{module}:registry")) == ["helper"]
    assert names(load_registry(f"./{project.name}:both")) == ["helper", "other"]
    assert names(load_registry(f"{project}:helper")) == ["helper"]  # an Agent alone
    assert names(load_registry(f"{module}:make")) == ["other"]  # a callable


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("{module}", "must look like 'module:registry'"),
        ("{module}:nothing", "has no attribute 'nothing'"),
        ("{module}:number", "is a int, not an AgentRegistry, an Agent or a list of Agents"),
        ("./missing.py:registry", "no such file: ./missing.py"),
        ("no_such_module_here:registry", "No module named 'no_such_module_here'"),
    ],
)
def test_what_is_not_agents_is_one_line(project: Path, spec: str, says: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_registry(spec.format(module=project.stem))
    assert says in str(err.value) and "\n" not in str(err.value)
