"""A sync tool that never returns cannot take the worker's activity slots.

Python cannot stop a thread, so the tool runs in a thread of its own and its activity stops
waiting at the attempt's deadline: the model sees an error, the call is not retried, and the
slot is free for other agents. The tools here block on an event the test sets at its end.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message, open_deps, serving, start_attempts
from wakeful.activities.tool_thread import LEFT_RUNNING, MAX_LEFT_RUNNING
from wakeful.agents import Agent, AgentRegistry, Tool, ToolContext
from wakeful.contracts import RUN_TOOL
from wakeful.demo.agent import INSTRUCTIONS
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.serve import register_agent
from wakeful.worker.worker import build_worker
from wakeful.workflows.agent import workflow_id

NO_ARGS = {"type": "object", "properties": {}}
WAKE_LIMIT_S = 60  # a failure timeout only: a starved worker never finishes the wake


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at the end of the test, so the tools it left blocked return."""
    event = threading.Event()
    yield event
    event.set()


def _agent(tenant: str, name: str, tool: Tool, workdir: Path) -> Agent:
    return Agent(
        name=name, instructions=INSTRUCTIONS, tools=(tool,), workdir=str(workdir), tenant=tenant
    )


async def _run_tool_attempts(client: Client, agent: Agent) -> list[int]:
    history = await client.get_workflow_handle(
        workflow_id(agent.tenant, agent.name)
    ).fetch_history()
    return start_attempts(history, RUN_TOOL)


async def _until(condition: Callable[[], bool], failure: str) -> None:
    for _ in range(WAKE_LIMIT_S * 10):
        if condition():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(failure)


def _tool_results(store: Store, agent: Agent, wake_id: str) -> list[Any]:
    events = store.tenant(agent.tenant).events(agent.name, wake_id=wake_id)
    return [e for e in events if e.kind == "tool_result"]


async def test_tools_that_never_return_leave_the_worker_serving_other_agents(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,
    tmp_path: Path,
    release: threading.Event,
) -> None:
    entered: list[str] = []

    def hang(args: dict[str, Any], ctx: ToolContext) -> str:
        entered.append(ctx.agent)
        release.wait()
        return "hang returned"

    def echo(args: dict[str, Any], ctx: ToolContext) -> str:
        return "echo ok"

    tenant = f"stuck-{uuid.uuid4().hex[:8]}"
    hang_tool = Tool("hang", "Block.", NO_ARGS, hang, timeout_s=8)
    stuck = [_agent(tenant, f"stuck{i}", hang_tool, tmp_path) for i in range(MAX_LEFT_RUNNING)]
    other = _agent(tenant, "other", Tool("echo", "Echo.", NO_ARGS, echo, timeout_s=8), tmp_path)
    for a in (*stuck, other):
        register_agent(store.tenant(tenant), a)
    client = temporal_dev.client
    queue = f"q-{uuid.uuid4().hex[:8]}"
    first = stuck[0]
    key = (tenant, first.name, "hang")
    async with open_deps(store, AgentRegistry([*stuck, other]), sim, uuid.uuid4().hex) as deps:
        # As many slots as stuck calls: calls that kept their slots would starve the worker.
        async with serving(build_worker(client, deps, queue, max_threads=MAX_LEFT_RUNNING)):
            try:
                hanging = asyncio.gather(
                    *(wake(client, a.runtime(), message("hang please"), queue) for a in stuck)
                )
                await _until(lambda: len(entered) == MAX_LEFT_RUNNING, "the tools never started")
                # Every slot's tool is blocked, and another agent's wake still runs to the end.
                done = await asyncio.wait_for(
                    wake(client, other.runtime(), message("echo please"), queue),
                    timeout=WAKE_LIMIT_S,
                )
                results = await asyncio.wait_for(hanging, timeout=WAKE_LIMIT_S)
                assert (done.status, done.tool_calls) == ("done", 1)
                assert [e.text for e in _tool_results(store, other, done.wake_id)] == ["echo ok"]

                for a, result in zip(stuck, results, strict=True):
                    assert (result.status, result.tool_calls) == ("done", 1)
                    (tool_result,) = _tool_results(store, a, result.wake_id)
                    assert tool_result.is_error
                    assert tool_result.text == (
                        "hang did not return within 6 s; it was left running and will not be"
                        " retried"
                    )
                    assert await _run_tool_attempts(client, a) == [1]
                assert sorted(entered) == sorted(a.name for a in stuck)  # no retry ran it

                # One agent's tool stuck MAX_LEFT_RUNNING times is then refused at once.
                for n in range(2, MAX_LEFT_RUNNING + 1):
                    again = await asyncio.wait_for(
                        wake(client, first.runtime(), message("hang again"), queue),
                        timeout=WAKE_LIMIT_S,
                    )
                    (tool_result,) = _tool_results(store, first, again.wake_id)
                    assert "did not return within" in tool_result.text
                    assert LEFT_RUNNING.count(key) == n
                refused = await asyncio.wait_for(
                    wake(client, first.runtime(), message("hang once more"), queue),
                    timeout=WAKE_LIMIT_S,
                )
                (refusal,) = _tool_results(store, first, refused.wake_id)
                assert refusal.is_error
                assert refusal.text.startswith(
                    f"hang not run: {MAX_LEFT_RUNNING} earlier calls of it are still running"
                )
                assert "\n" not in refusal.text
                assert entered.count(first.name) == MAX_LEFT_RUNNING  # no thread started
                assert await _run_tool_attempts(client, first) == [1] * (MAX_LEFT_RUNNING + 1)
            finally:
                release.set()  # the blocked tools return; a worker on the old code can stop

    await _until(lambda: LEFT_RUNNING.count(key) == 0, "released tools still count as stuck")
