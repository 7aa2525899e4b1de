from __future__ import annotations

import pytest

from wakeful.compiler import BlockKind, load_policy
from wakeful.errors import ConfigError

from .factory import base_blocks, block, goal, snapshot
from .helpers import compile_

POLICY = """
[[triggers]]
name = "migrations"
precedence = 10
paths = ["db/migrations/*"]
inject = ["skill:migrate"]
rules = ["Never edit an applied migration."]

[[triggers]]
name = "no-skills-on-pages"
precedence = 20
intents = ["page"]
suppress = ["skill:migrate"]

[[triggers]]
name = "deploys"
task_classes = ["deploy"]
inject = ["skill-deploy"]
"""


def _blocks() -> list:
    return [
        *base_blocks(),
        block(
            "skill-migrate",
            BlockKind.SKILL_BODY,
            "How to migrate.",
            seq=6,
            supersession_key="skill:migrate",
        ),
        block("skill-deploy", BlockKind.SKILL_BODY, "How to deploy.", seq=7),
    ]


def test_gated_blocks_enter_only_when_triggered() -> None:
    policy = load_policy(POLICY)
    idle = compile_(snapshot(_blocks()), policy)
    assert idle.ledger.row("skill-migrate").reason == "not_triggered"  # type: ignore[union-attr]
    assert idle.ledger.row("skill-deploy").reason == "not_triggered"  # type: ignore[union-attr]
    fired = compile_(snapshot(_blocks()), policy, goal=goal(paths=("db/migrations/0042.sql",)))
    row = fired.ledger.row("skill-migrate")
    assert row is not None and row.position >= 0 and row.detail == "trigger migrations"
    rule = fired.ledger.row("trigger:migrations:0")
    assert rule is not None and rule.segment == "semi_stable" and rule.position >= 0
    assert "Never edit an applied migration." in fired.request["system"][1]["text"]


def test_precedence_decides_between_triggers() -> None:
    both = goal(paths=("db/migrations/1.sql",), intents=("page",), task_class="deploy")
    w = compile_(snapshot(_blocks()), load_policy(POLICY), goal=both)
    row = w.ledger.row("skill-migrate")
    assert row is not None and row.reason == "suppressed" and "no-skills-on-pages" in row.rule
    assert w.ledger.row("skill-deploy").position >= 0  # type: ignore[union-attr]


ABSENT = """
[[triggers]]
name = "migrations"
paths = ["db/*"]
inject = ["skill:db-migrations"]
"""


def test_a_firing_trigger_injecting_a_missing_skill_fails_the_compile_in_one_line() -> None:
    policy = load_policy(ABSENT)
    compile_(snapshot(_blocks()), policy)  # not firing: nothing to inject
    with pytest.raises(ConfigError) as err:
        compile_(snapshot(_blocks()), policy, goal=goal(paths=("db/0042.sql",)))
    assert "\n" not in str(err.value)
    assert "trigger 'migrations' injects 'skill:db-migrations'" in str(err.value)


def test_a_loaded_skill_is_not_gated_by_a_trigger_that_does_not_fire() -> None:
    loaded = block(
        "skill:deploy", BlockKind.SKILL_BODY, "How to deploy.", seq=8, meta={"loaded": "12"}
    )
    policy = load_policy(
        '[[triggers]]\nname = "d"\npaths = ["deploy/*"]\ninject = ["skill:deploy"]'
    )
    w = compile_(snapshot([*base_blocks(), loaded]), policy)
    row = w.ledger.row("skill:deploy")
    assert row is not None and row.status == "included"
