"""``wakeful.testing.AgentTestEnv`` as a team would use it to test its own agent: started
from nothing (it runs its own Temporal dev server and embedded Postgres), and on servers
the test already runs (``TestServers``, or each given by itself). A scripted model calls
the agent's typed tool, the tool really runs, and the answer, the model calls and the
recorded events come back."""

from __future__ import annotations

import uuid

import pytest
from temporalio.testing import WorkflowEnvironment

from wakeful import Agent, tool
from wakeful.errors import UserError
from wakeful.testing import AgentTestEnv, TestServers
from wakeful.testing.simulator.server import SimulatorServer

LOGS = {"billing": "ERROR migration 0042 timed out after 300 s"}


def read_log(service: str) -> str:
    """The last error line of a service's deploy log."""
    return LOGS.get(service, "no errors")


def _agent() -> Agent:
    return Agent(
        name="triage",
        instructions="Triage failed deploys.",
        tools=[tool(read_log)],
        tenant=f"testenv-{uuid.uuid4().hex[:8]}",
    )


SCRIPT = [
    {"tool_calls": [{"name": "read_log", "input": {"service": "billing"}}]},
    {"text": "billing: migration 0042 timed out"},
]


async def _triage(env: AgentTestEnv, agent: Agent) -> None:
    env.script(SCRIPT)
    result = await env.wake(agent, "billing deploy failed")

    assert (result.status, result.model_calls, result.tool_calls) == ("done", 2, 1)
    assert result.output == "billing: migration 0042 timed out"
    assert len(env.calls()) == 2
    results = [e.text for e in env.events(agent, wake_id=result.wake_id) if e.kind == "tool_result"]
    assert results == [LOGS["billing"]]  # the real tool ran, with the model's arguments


async def test_an_environment_started_from_nothing_runs_a_tool_wake() -> None:
    agent = _agent()
    async with AgentTestEnv.start(agent) as env:
        await _triage(env, agent)


async def test_environments_sharing_servers_do_not_see_each_others_calls(
    temporal_dev: WorkflowEnvironment, pg_url: str, sim: SimulatorServer
) -> None:
    servers = TestServers(temporal=temporal_dev.client, database_url=pg_url, sim=sim)
    first, second = _agent(), _agent()
    async with (
        AgentTestEnv.start(first, servers=servers) as a,
        AgentTestEnv.start(second, temporal=temporal_dev.client, database_url=pg_url, sim=sim) as b,
    ):
        await _triage(a, first)
        assert b.calls() == []  # another scope, another task queue
        await _triage(b, second)


async def test_a_wake_for_a_user_is_stored_as_that_users(
    temporal_dev: WorkflowEnvironment, pg_url: str, sim: SimulatorServer
) -> None:
    agent = _agent()
    servers = TestServers(temporal=temporal_dev.client, database_url=pg_url, sim=sim)
    async with AgentTestEnv.start(agent, servers=servers) as env:
        env.script(SCRIPT)
        result = await env.wake(agent, "billing deploy failed", user="alice")
        assert result.status == "done"
        assert {e.user_id for e in env.events(agent, wake_id=result.wake_id)} == {"alice"}
        with pytest.raises(UserError, match="user is empty"):
            await env.wake(agent, "again", user="")
