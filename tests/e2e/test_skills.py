"""Skills end to end: a trigger injects a skill's body, the model loads one with
``load_skill`` and keeps it for the session, a trigger naming a skill the agent lacks fails
the compile in one line, and the skills index sits in the cached stable prefix."""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

from tests.e2e.harness import RunWakes, message
from wakeful.agents import Agent
from wakeful.compiler.blocks import Goal, GoalKind
from wakeful.compiler.ledger import Ledger
from wakeful.contracts import Trigger
from wakeful.replay import recompile
from wakeful.substrate.store import Store, TenantStore

DEPLOY_BODY = "To deploy: run the canary first, then promote; never deploy on Fridays."
ROLLBACK_BODY = "To roll back: revert the release tag and page the owner."


def one_trigger_policy(name: str, trigger: str, path: str, skill: str) -> str:
    """A policy (TOML) whose one trigger, ``trigger``, injects ``skill`` into a wake whose
    goal touches a path matching ``path``."""
    return (
        f'name = "{name}"\n\n[[triggers]]\nname = "{trigger}"\n'
        f'paths = ["{path}"]\ninject = ["skill:{skill}"]\n'
    )


POLICY = one_trigger_policy("skilled", "deploys", "deploy/*", "deploy")
UNKNOWN = one_trigger_policy("unknown-skill", "migrations", "db/*", "db-migrations")


def write_skill(root: Path, name: str, description: str, body: str) -> None:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n---\n\n{body}\n", encoding="utf-8"
    )


def skilled(agent: Agent, tmp_path: Path, policy: str = POLICY) -> Agent:
    skills = tmp_path / "skills"
    write_skill(skills, "rollback", "Rolling a release back.", ROLLBACK_BODY)
    write_skill(skills, "deploy", "Deploying a service safely.", DEPLOY_BODY)
    policy_file = tmp_path / "policy.toml"
    policy_file.write_text(policy, encoding="utf-8")
    return replace(agent, skills_dir=str(skills), policy=str(policy_file))


def with_paths(text: str, *paths: str) -> Trigger:
    return Trigger(
        goal=Goal(kind=GoalKind.MESSAGE, text=text, paths=paths),
        idempotency_key=uuid.uuid4().hex,
    )


def window(ts: TenantStore, wake_id: str, call: int) -> dict[str, Any]:
    rec = ts.compiles(wake_id)[call]
    out: dict[str, Any] = json.loads(ts.get_blob(rec.window_hash))
    return out


def ledger(ts: TenantStore, wake_id: str, call: int) -> Ledger:
    return Ledger.model_validate_json(ts.get_blob(ts.compiles(wake_id)[call].ledger_hash))


def system(request: dict[str, Any]) -> list[str]:
    return [part["text"] for part in request["system"]]


def assert_replays(ts: TenantStore, wake_id: str) -> None:
    for rec in ts.compiles(wake_id):
        outcome = recompile(ts, rec)
        assert outcome.identical and outcome.snapshot_identical, outcome.summary()


async def test_a_glob_trigger_injects_a_skill_and_the_ledger_names_the_trigger(
    store: Store, agent: Agent, tmp_path: Path, run_wakes: RunWakes
) -> None:
    a = skilled(agent, tmp_path)
    ts = store.tenant(a.tenant)
    hit, miss = await run_wakes(
        a, with_paths("ship it", "deploy/api.yaml"), with_paths("tidy up", "src/x.py")
    )
    assert hit.status == miss.status == "done", (hit.error, miss.error)

    shown = system(window(ts, hit.wake_id, 0))
    assert DEPLOY_BODY in shown[1]  # the semi-stable segment
    assert ROLLBACK_BODY not in json.dumps(shown)  # nothing named it
    row = next(r for r in ledger(ts, hit.wake_id, 0).rows if r.block_id == "skill:deploy")
    assert (row.status, row.kind, row.detail) == ("included", "skill_body", "trigger deploys")
    assert ledger(ts, hit.wake_id, 0).decisions["triggers.fired"] == "deploys"

    assert DEPLOY_BODY not in json.dumps(window(ts, miss.wake_id, 0))
    gated = next(r for r in ledger(ts, miss.wake_id, 0).rows if r.block_id == "skill:deploy")
    assert (gated.status, gated.reason, gated.rule) == (
        "excluded",
        "not_triggered",
        "triggers.deploys",
    )
    assert_replays(ts, hit.wake_id)


async def test_a_skill_the_model_loads_stays_for_the_session(
    store: Store, agent: Agent, tmp_path: Path, run_wakes: RunWakes
) -> None:
    a = skilled(agent, tmp_path)
    ts = store.tenant(a.tenant)
    # The simulator's planner calls the tool the message names, with these arguments.
    first, later, wrong = await run_wakes(
        a,
        message('load_skill {"name": "rollback"}'),
        message("how do we undo it?"),
        message('load_skill {"name": "nope"}'),
    )
    assert first.status == later.status == wrong.status == "done"
    assert first.session_id == later.session_id

    # The call that loaded it did not see it; the next call of the wake and later wakes do.
    assert ROLLBACK_BODY not in json.dumps(window(ts, first.wake_id, 0))
    assert ROLLBACK_BODY in system(window(ts, first.wake_id, 1))[1]
    assert ROLLBACK_BODY in system(window(ts, later.wake_id, 0))[1]
    # Loading it rewrote the cached prefix once: from then on the system part stays put.
    assert system(window(ts, first.wake_id, 1)) == system(window(ts, later.wake_id, 0))
    row = next(r for r in ledger(ts, later.wake_id, 0).rows if r.block_id == "skill:rollback")
    assert row.status == "included"
    assert DEPLOY_BODY not in json.dumps(window(ts, later.wake_id, 0))

    (result,) = [e for e in ts.events(a.name, wake_id=wrong.wake_id) if e.kind == "tool_result"]
    assert result.is_error
    assert result.text == "no skill is named 'nope'; the known skills are: deploy, rollback"
    for wake_id in (first.wake_id, later.wake_id):
        assert_replays(ts, wake_id)


def with_task(text: str, task_class: str) -> Trigger:
    return Trigger(
        goal=Goal(kind=GoalKind.MESSAGE, text=text, task_class=task_class),
        idempotency_key=uuid.uuid4().hex,
    )


async def test_a_loaded_skill_is_unloaded_when_the_task_class_changes(
    store: Store, agent: Agent, tmp_path: Path, run_wakes: RunWakes
) -> None:
    """The load records the task class of the goal it was made under; a later wake of the
    same session with another task class leaves the body out, one of the same keeps it."""
    a = skilled(agent, tmp_path)
    ts = store.tenant(a.tenant)
    first, same, other = await run_wakes(
        a,
        with_task('load_skill {"name": "rollback"}', "incident"),
        with_task("how do we undo it?", "incident"),
        with_task("what does the invoice say?", "billing"),
    )
    assert first.status == same.status == other.status == "done"
    assert first.session_id == same.session_id == other.session_id
    (loaded,) = [e for e in ts.events(a.name, wake_id=first.wake_id) if e.kind == "tool_result"]
    assert loaded.meta["skill"] == "rollback" and loaded.meta["task"] == "incident"
    assert ROLLBACK_BODY in system(window(ts, same.wake_id, 0))[1]
    assert ROLLBACK_BODY not in json.dumps(window(ts, other.wake_id, 0))
    row = next(r for r in ledger(ts, other.wake_id, 0).rows if r.block_id == "skill:rollback")
    assert (row.status, row.reason, row.rule, row.detail) == (
        "excluded",
        "unloaded",
        "skills.task_class",
        "loaded for task 'incident'; this goal's task is 'billing'",
    )
    for wake_id in (same.wake_id, other.wake_id):
        assert_replays(ts, wake_id)


async def test_a_trigger_injecting_an_unknown_skill_fails_the_compile_in_one_line(
    store: Store, agent: Agent, tmp_path: Path, run_wakes: RunWakes
) -> None:
    a = skilled(agent, tmp_path, UNKNOWN)
    (result,) = await run_wakes(a, with_paths("migrate", "db/0042.sql"))
    assert result.status != "done" and result.model_calls == 0
    assert "\n" not in result.error
    assert "'skill:db-migrations'" in result.error and "migrations" in result.error, result.error


async def test_the_skills_index_is_in_the_stable_prefix_byte_for_byte_across_wakes(
    store: Store, agent: Agent, tmp_path: Path, run_wakes: RunWakes
) -> None:
    a = skilled(agent, tmp_path)
    ts = store.tenant(a.tenant)
    one, two = await run_wakes(a, message("hello"), with_paths("ship it", "deploy/web.yaml"))
    assert one.status == two.status == "done"
    firsts = [window(ts, w, 0) for w in (one.wake_id, two.wake_id)]
    for request in firsts:
        stable = request["system"][0]
        assert stable["cache_control"]  # the "stable" breakpoint closes it
        assert (
            "- deploy: Deploying a service safely.\n- rollback: Rolling a release back."
            in (stable["text"])
        )
        assert "load_skill" in [t["name"] for t in request["tools"]]
    assert firsts[0]["tools"] == firsts[1]["tools"]
    assert firsts[0]["system"][0] == firsts[1]["system"][0]
    (mark,) = [b for b in ledger(ts, one.wake_id, 0).breakpoints if b.name == "stable"]
    assert mark.location == "/system/0"
    prefix = [ts.compiles(w)[0].stable_prefix_hash for w in (one.wake_id, two.wake_id)]
    assert prefix[0] == prefix[1]
