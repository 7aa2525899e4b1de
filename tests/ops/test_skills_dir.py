"""Skills directories are read and validated when the worker starts: a bad SKILL.md stops
it with one line naming the file and the field (``WAKEFUL_SKILLS_DIR`` and
``Agent(skills_dir=...)`` alike)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ops.policy_setup import clerk_worker_refuses, policy_dir
from wakeful.agents import Agent, AgentRegistry
from wakeful.errors import ConfigError
from wakeful.skills import load_skills_dir, merge_skills
from wakeful.worker.settings import Settings


def _skill(root: Path, folder: str, text: str) -> Path:
    (root / folder).mkdir(parents=True, exist_ok=True)
    path = root / folder / "SKILL.md"
    path.write_text(text, encoding="utf-8")
    return path


GOOD = "---\nname: deploy\ndescription: Deploying a service.\n---\nRun the canary first.\n"


def test_a_bad_skill_file_stops_the_worker_with_one_line(
    env: dict[str, str], tmp_path: Path
) -> None:
    skills = tmp_path / "skills"
    _skill(skills, "deploy", GOOD)
    bad = _skill(skills, "rollback", "---\nname: rollback\n---\nRevert the tag.\n")
    line = clerk_worker_refuses(
        tmp_path, env, {"WAKEFUL_SKILLS_DIR": str(skills), "CLERK_POLICY": "default"}
    )
    assert f"bad skill file {bad}: description:" in line, line


def test_a_trigger_injecting_a_skill_no_agent_has_stops_the_worker(
    env: dict[str, str], tmp_path: Path
) -> None:
    skills = tmp_path / "skills"
    _skill(skills, "deploy", GOOD)
    db_trigger = '[[triggers]]\nname = "db"\npaths = ["db/*"]\ninject = ["skill:db-migrations"]\n'
    policies = policy_dir(tmp_path, {"triage.toml": db_trigger})
    line = clerk_worker_refuses(
        tmp_path, env, {"WAKEFUL_SKILLS_DIR": str(skills), "WAKEFUL_POLICY_DIR": str(policies)}
    )
    assert "agent 'clerk'" in line and "trigger 'db' injects 'skill:db-migrations'" in line
    assert "(its skills: deploy)" in line, line


@pytest.mark.parametrize(
    ("folder", "text", "field"),
    [
        ("deploy", "no front matter\n", "front matter"),
        ("deploy", "---\nname: [a\n---\nbody\n", "front matter"),
        ("deploy", "---\nname: Deploy\ndescription: d\n---\nbody\n", "name"),
        ("other", GOOD, "name"),
        ("deploy", "---\nname: deploy\ndescription: ''\n---\nbody\n", "description"),
        ("deploy", "---\nname: deploy\ndescription: d\n---\n\n", "body"),
    ],
)
def test_each_bad_field_is_named_in_one_line(
    tmp_path: Path, folder: str, text: str, field: str
) -> None:
    path = _skill(tmp_path, folder, text)
    with pytest.raises(ConfigError) as err:
        load_skills_dir(tmp_path)
    assert str(err.value).startswith(f"bad skill file {path}: {field}:"), str(err.value)
    assert "\n" not in str(err.value)


def test_an_agents_skills_dir_is_read_when_it_joins_the_registry(tmp_path: Path) -> None:
    _skill(tmp_path / "mine", "deploy", GOOD)
    agent = Agent(name="clerk", instructions="i", skills_dir=str(tmp_path / "mine"))
    (skill,) = AgentRegistry([agent]).agent_skills(agent)
    assert (skill.name, skill.description, skill.body) == (
        "deploy",
        "Deploying a service.",
        "Run the canary first.",
    )
    with pytest.raises(ConfigError, match=r"^agent 'clerk': skills directory .*nowhere"):
        AgentRegistry([Agent(name="clerk", instructions="i", skills_dir=str(tmp_path / "nowhere"))])


def test_the_agents_own_skill_wins_over_the_workers(tmp_path: Path) -> None:
    _skill(tmp_path / "w", "deploy", GOOD)
    _skill(tmp_path / "w", "audit", GOOD.replace("deploy", "audit"))
    _skill(tmp_path / "a", "deploy", GOOD.replace("canary", "smoke test"))
    merged = merge_skills(load_skills_dir(tmp_path / "w"), load_skills_dir(tmp_path / "a"))
    assert [(s.name, s.body) for s in merged] == [
        ("audit", "Run the canary first."),
        ("deploy", "Run the smoke test first."),
    ]


def test_the_skills_dir_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WAKEFUL_SKILLS_DIR", raising=False)
    assert Settings().skills_dir is None
    monkeypatch.setenv("WAKEFUL_SKILLS_DIR", str(tmp_path))
    assert Settings().skills_dir == tmp_path
