"""``wakeful agent show`` lists the skills a worker gives the agent: its own directory's
(``Agent(skills_dir=...)``) and the worker's (``WAKEFUL_SKILLS_DIR``), its own winning on a
name both have; it says when there are none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.ops.cli_env import make_env, one_line_error, run


def _skill(root: Path, name: str, description: str) -> None:
    (root / name).mkdir(parents=True, exist_ok=True)
    (root / name / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n---\nThe steps.\n", encoding="utf-8"
    )


@pytest.fixture
def env(pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    # agent create and agent show read and write the substrate only: no Temporal server.
    return make_env(pg_url, "127.0.0.1:1", tmp_path, monkeypatch)


def test_agent_show_lists_the_agents_skills(env: dict[str, str], tmp_path: Path) -> None:
    own, worker = tmp_path / "own", tmp_path / "worker"
    _skill(own, "deploy", "Deploying with our canary.")
    _skill(worker, "deploy", "Deploying a service.")
    _skill(worker, "rollback", "Reverting a release.")
    agents = tmp_path / "skill_agents.py"
    agents.write_text(
        "import os\nfrom wakeful import Agent, AgentRegistry\n"
        "tenant = os.environ['WAKEFUL_TENANT']\n"
        "registry = AgentRegistry([\n"
        f"    Agent(name='clerk', instructions='x', tenant=tenant, skills_dir={str(own)!r}),\n"
        "    Agent(name='plain', instructions='x', tenant=tenant),\n"
        "])\n"
    )
    created = run(["agent", "create", "--agents", f"{agents}:registry"], env)
    assert created.exit_code == 0, created.output
    with_worker = env | {"WAKEFUL_SKILLS_DIR": str(worker)}

    shown = run(["agent", "show", "clerk", "--json"], with_worker)
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["skills"] == [
        {"name": "deploy", "description": "Deploying with our canary."},
        {"name": "rollback", "description": "Reverting a release."},
    ]
    said = run(["agent", "show", "clerk"], with_worker)
    assert said.exit_code == 0, said.output
    lines = said.stdout.splitlines()
    at = lines.index("  skills (2):")
    assert lines[at + 1 : at + 3] == [
        "    deploy: Deploying with our canary.",
        "    rollback: Reverting a release.",
    ]
    # Without the worker's directory: the agent's own skills only.
    alone = json.loads(run(["agent", "show", "clerk", "--json"], env).stdout)
    assert [k["name"] for k in alone["skills"]] == ["deploy"]

    plain = run(["agent", "show", "plain"], env)
    assert plain.exit_code == 0 and "  no skills" in plain.stdout.splitlines(), plain.output
    assert json.loads(run(["agent", "show", "plain", "--json"], env).stdout)["skills"] == []


def test_a_skills_directory_that_is_gone_is_one_line(env: dict[str, str], tmp_path: Path) -> None:
    own = tmp_path / "own"
    _skill(own, "deploy", "Deploying with our canary.")
    agents = tmp_path / "gone_agents.py"
    agents.write_text(
        "import os\nfrom wakeful import Agent, AgentRegistry\n"
        "registry = AgentRegistry([Agent(name='clerk', instructions='x',\n"
        f"    tenant=os.environ['WAKEFUL_TENANT'], skills_dir={str(own)!r})])\n"
    )
    assert run(["agent", "create", "--agents", f"{agents}:registry"], env).exit_code == 0
    (own / "deploy" / "SKILL.md").unlink()
    (own / "deploy").rmdir()
    own.rmdir()
    one_line_error(run(["agent", "show", "clerk"], env), 2, f"skills directory {str(own)!r}")
