"""What the worker checks at start about skills its policies' triggers inject: a skill no
agent of the policy has stops it (a misspelt name); one only some of the policy's agents
have is a warning naming the others, whose compiles fail closed if the trigger fires."""

from __future__ import annotations

import logging

import pytest

from wakeful.agents import Agent
from wakeful.compiler import load_policy
from wakeful.errors import ConfigError
from wakeful.skills import Skill
from wakeful.worker.serve import check_trigger_skills

TRIAGE = load_policy(
    'name = "triage"\n'
    '[[triggers]]\nname = "db"\npaths = ["db/*"]\ninject = ["skill:db-migrations"]\n'
)
MIGRATIONS = Skill(name="db-migrations", description="Schema changes.", body="Expand first.")
DEPLOY = Skill(name="deploy", description="Deploying a service.", body="Canary first.")


def _agent(name: str) -> Agent:
    return Agent(name=name, instructions="Triage.", model="claude-sonnet-4-5", policy="triage")


def test_a_skill_only_some_agents_of_a_shared_policy_have_is_a_warning_naming_the_others(
    caplog: pytest.LogCaptureFixture,
) -> None:
    dba, clerk = _agent("dba"), _agent("clerk")
    skills = {"dba": (MIGRATIONS, DEPLOY), "clerk": (DEPLOY,)}
    with caplog.at_level(logging.WARNING, logger="wakeful.worker"):
        warnings = check_trigger_skills([dba, clerk], {"triage": TRIAGE}, lambda a: skills[a.name])
    assert len(warnings) == 1
    assert "agent 'clerk'" in warnings[0] and "no skill 'db-migrations'" in warnings[0]
    assert "trigger 'db'" in warnings[0] and "dba" not in warnings[0]
    assert [r.getMessage() for r in caplog.records] == warnings


def test_a_skill_no_agent_of_the_policy_has_stops_the_worker_in_one_line() -> None:
    agents = [_agent("dba"), _agent("clerk")]
    with pytest.raises(ConfigError) as err:
        check_trigger_skills(agents, {"triage": TRIAGE}, lambda a: (DEPLOY,))
    line = str(err.value)
    assert "\n" not in line
    assert "agent 'dba'" in line and "trigger 'db' injects 'skill:db-migrations'" in line
    assert "(its skills: deploy)" in line


def test_agents_that_all_have_the_skill_raise_and_warn_nothing() -> None:
    agents = [_agent("dba"), _agent("ops")]
    assert check_trigger_skills(agents, {"triage": TRIAGE}, lambda a: (MIGRATIONS,)) == []
