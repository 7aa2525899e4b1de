"""Intents, paths and a task class on a trigger: the webhook body's fields and the CLI's
flags reach the wake's goal, and a bad value is refused in one line before anything is
delivered."""

from __future__ import annotations

import json
import uuid

import jsonschema
import pytest
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import running_worker
from tests.ops.cli_env import AGENTS, one_line_error, run
from tests.ops.hooks import event, post, signals, terminate
from tests.ops.ingress_setup import LiveIngress, MakeIngress, ingress_settings
from wakeful.agents import Agent, AgentRegistry
from wakeful.compiler.blocks import Goal, GoalKind
from wakeful.errors import UserError
from wakeful.routing import routing
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import Client
from wakeful.worker.ingress_events import EVENT_SCHEMA, EventError, parse_event

ROUTED = {"intents": ["deploy", "ops.rollback"], "paths": ["src/app.py"], "task_class": "incident"}


async def test_webhook_intents_paths_and_task_class_reach_the_goal(live: LiveIngress) -> None:
    store, agent = live.store, live.agent
    body = event("evt-routed", text="deploy 812 failed; say so.", **ROUTED)
    async with live.serving() as q:
        accepted = await live.deliver(live.ingress(q), body)
        assert accepted.status_code == 202, accepted.text
        # Wait for that wake through its key: the workflow answers with the one wake.
        result = await live.woken(q, "evt-routed")
    assert result.deduplicated and result.status == "done"
    ts = store.tenant(agent.tenant)
    (only,) = ts.wakes(agent.name)
    for goal in (only.goal, ts.compiles(only.wake_id)[0].goal):
        assert {k: goal[k] for k in ROUTED} == ROUTED


async def test_the_python_client_sets_the_goals_routing(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer, agent: Agent
) -> None:
    async with running_worker(
        temporal_dev.client, store, AgentRegistry([agent]), sim, uuid.uuid4().hex
    ) as q:
        wakeful_client = Client(temporal_dev.client, task_queue=q)
        result = await wakeful_client.wake(
            agent, "hi", paths=["src/app.py"], intents=["review"], task_class="chore"
        )
        with pytest.raises(UserError, match="path '' is invalid"):
            await wakeful_client.start(agent, "hi", paths=[""])
    assert result.status == "done"
    (only,) = store.tenant(agent.tenant).wakes(agent.name)
    assert (only.goal["paths"], only.goal["intents"], only.goal["task_class"]) == (
        ["src/app.py"],
        ["review"],
        "chore",
    )


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"intents": ["two words"]}, "intents.0: use 1-64 of A-Z a-z 0-9"),
        ({"intents": "deploy"}, "intents: Input should be a valid list"),
        ({"task_class": "x" * 65}, "task_class: use 1-64 of"),
        ({"paths": ["a\nb"]}, "paths.0: use 1-1024 characters, no control characters"),
        ({"paths": ["p"] * 257}, "paths: List should have at most 256 items"),
        ({"intent": ["deploy"]}, "new_session, intents, paths, task_class, user)"),
    ],
)
async def test_bad_routing_fields_are_a_one_line_422(
    temporal_dev: WorkflowEnvironment,
    agent: Agent,
    make_ingress: MakeIngress,
    fields: dict[str, object],
    says: str,
) -> None:
    ingress = make_ingress(ingress_settings(agent))
    try:
        answer = await post(ingress, f"/hooks/{agent.name}", event("evt-bad", **fields))
        assert answer.status_code == 422, answer.text  # as for any invalid event
        message = answer.json()["message"]
        assert "\n" not in message and says in message, message
        assert await signals(temporal_dev.client, agent.tenant, agent.name) is None
    finally:
        await terminate(temporal_dev.client, agent.tenant, agent.name)


def test_the_published_schema_takes_the_routing_fields() -> None:
    """Senders read EVENT_SCHEMA: it and the ingress agree on the new fields."""
    validator = jsonschema.Draft202012Validator(EVENT_SCHEMA)
    good = json.loads(event("e", **ROUTED))
    assert validator.is_valid(good)
    assert parse_event(json.dumps(good).encode()).intents == ROUTED["intents"]
    for bad in ({"intents": ["a b"]}, {"task_class": ""}, {"paths": [""]}, {"intents": [1]}):
        candidate = good | bad
        assert not validator.is_valid(candidate), bad
        with pytest.raises(EventError):
            parse_event(json.dumps(candidate).encode())


def test_routing_checks_values_in_one_line() -> None:
    assert routing(["a"], ["src/*.py"], "c").apply(Goal(kind=GoalKind.MESSAGE, text="t")) == Goal(
        kind=GoalKind.MESSAGE, text="t", intents=("a",), paths=("src/*.py",), task_class="c"
    )
    bare = Goal(kind=GoalKind.MESSAGE, text="t")
    assert routing().apply(bare) is bare


def test_cli_trigger_refuses_a_bad_intent_path_or_task_class(env: dict[str, str]) -> None:
    assert run(["agent", "create", "--agents", AGENTS], env).exit_code == 0
    base = ["trigger", "clerk", "-m", "hi", "--no-wait"]
    one_line_error(run([*base, "--intent", "two words"], env), 2, "intent 'two words' is invalid")
    one_line_error(run([*base, "--task-class", "-x"], env), 2, "task class '-x' is invalid")
    one_line_error(run([*base, "--path", "a\x01b"], env), 2, "path 'a\\x01b' is invalid")
    many = [arg for i in range(33) for arg in ("--intent", f"i{i}")]
    one_line_error(run([*base, *many], env), 2, "too many intents: at most 32")
    schedule = ["schedule", "add", "clerk", "s1", "-m", "hi", "--every", "1h"]
    one_line_error(run([*schedule, "--intent", "a b"], env), 2, "intent 'a b' is invalid")


def test_cli_trigger_refuses_a_bad_user_in_one_line(env: dict[str, str]) -> None:
    """``--user`` is checked before anything is delivered (``--no-wait`` would deliver)."""
    assert run(["agent", "create", "--agents", AGENTS], env).exit_code == 0
    base = ["trigger", "clerk", "-m", "hi", "--no-wait"]
    one_line_error(run([*base, "--user", ""], env), 2, "user is empty")
    one_line_error(run([*base, "--user", "x" * 129], env), 2, "at most 128 are allowed")
    one_line_error(run([*base, "--user", "al\nice"], env), 2, "user 'al\\nice' is invalid")
    one_line_error(run([*base, "--user", "bob "], env), 2, "not starting or ending with a space")


async def test_the_python_client_refuses_a_bad_user_in_one_line(
    temporal_dev: WorkflowEnvironment, agent: Agent
) -> None:
    client = Client(temporal_dev.client, task_queue=f"q-{uuid.uuid4().hex[:8]}")
    for bad, says in (("", "user is empty"), ("a\x00b", "is invalid")):
        with pytest.raises(UserError, match=says):
            await client.start(agent, "hi", user=bad)
        with pytest.raises(UserError, match=says):
            async for _ in client.stream(agent, "hi", user=bad):
                pass
