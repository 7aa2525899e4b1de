"""A child agent's limits: its token ceiling (the window that would overshoot it is never
sent), its timeout, a working directory that would leave the parent's (refused before any
child starts), and ``on_invalid="report"`` (no retry)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowExecutionStatus
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message
from tests.orchestration.helpers import (
    FACTS,
    Gate,
    child_bundle,
    scout,
    the_tool_result,
    within,
    worker,
)
from wakeful.activities.child import child_agent
from wakeful.agents import Agent
from wakeful.contracts import ChildBundle, ChildResult
from wakeful.errors import UnknownAgentError, UserError
from wakeful.substrate.store import Store, TenantStore
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.workflows.agent import workflow_id
from wakeful.workflows.state import child_workflow_id

CHILD = "scout/child/1"
ANSWER = {"path": "README.md", "facts": ["release 2.4.0 is due 2026-12-15"]}
# The child's first window is ~340 tokens and reading README.md adds ~130: one call fits
# under this ceiling, a second would overshoot it.
CEILING = 600


def _delegating(agent: Agent, **facts: Any) -> Agent:
    return dataclasses.replace(agent, delegations=(dataclasses.replace(FACTS, **facts),))


def _delegate(task: str = "Key facts of README.md") -> dict[str, Any]:
    return {"tool_calls": [{"name": "delegate", "input": {"kind": "facts", "task": task}}]}


def _card(ts: TenantStore, agent: Agent, wake_id: str) -> Any:
    card = the_tool_result(ts, agent, wake_id)
    assert card.tool_name == "delegate"
    return card


async def _child_result(env: WorkflowEnvironment, agent: Agent) -> ChildResult:
    handle = env.client.get_workflow_handle(
        child_workflow_id(agent.tenant, CHILD), result_type=ChildResult
    )
    return await handle.result()


async def test_a_child_stops_before_a_window_that_would_overshoot_its_token_ceiling(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    env = temporal_skipping
    agent = _delegating(agent, max_tokens=CEILING)
    script = Script.parse(
        [
            _delegate(),
            {
                "text": "Reading.",
                "tool_calls": [{"name": "read_file", "input": {"path": "README.md"}}],
            },
            # The child's answer would come next; held back, the parent's call takes the step.
            {"text": "The child ran out of tokens."},
        ]
    )
    async with worker(env.client, store, [agent], osim, script=script) as (queue, _):
        result = await wake(env.client, agent.runtime(), message("delegate the README"), queue)
        child = await _child_result(env, agent)

    ts = store.tenant(agent.tenant)
    first, held = ts.compiles(f"{CHILD}:1")
    (call,) = ts.model_calls(f"{CHILD}:1")
    sent = call.input_tokens + call.cache_read_input_tokens + call.cache_creation_input_tokens
    assert first.input_tokens <= CEILING < sent + held.input_tokens, "window sizes moved"
    assert (child.status, child.attempts) == ("rejected", 1)  # no retry over the ceiling
    assert child.input_tokens == sent <= CEILING
    assert child.reason.endswith(f"(token ceiling {CEILING} reached)")
    assert not ts.compiles(f"{CHILD}:2")
    (closed,) = ts.wakes(CHILD)
    assert (closed.status, closed.finished_at is not None) == ("token_budget", True)
    card = _card(ts, agent, result.wake_id)
    assert card.is_error and f"(token ceiling {CEILING} reached)" in card.text
    assert (result.status, result.model_calls) == ("done", 2)


async def test_a_child_that_runs_past_its_timeout_is_reported_timed_out(
    temporal_dev: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    # The dev server: a time-skipping server's clock stands still while a tool runs.
    env, gate = temporal_dev, Gate()
    agent = dataclasses.replace(agent, tools=(*agent.tools, gate.tool()))
    # The child's clock starts with it: it must reach the gate (a compile and a model call)
    # well within its timeout on a loaded machine too, or it times out before it blocks.
    agent = _delegating(agent, tools=("wait_for_gate",), timeout_s=10)
    script = Script.parse(
        [
            _delegate(),
            {"tool_calls": [{"name": "wait_for_gate", "input": {}}]},  # the child blocks
            {"text": "The child timed out; I will read it myself."},
        ]
    )
    async with worker(env.client, store, [agent], osim, script=script) as (queue, _):
        try:
            result = await within(
                120,
                env.client,
                [workflow_id(agent.tenant, agent.name), child_workflow_id(agent.tenant, CHILD)],
                wake(env.client, agent.runtime(), message("delegate the README"), queue),
            )
        finally:
            gate.opened.set()  # let the orphaned tool's thread end before the worker does
        child = await env.client.get_workflow_handle(
            child_workflow_id(agent.tenant, CHILD)
        ).describe()

    assert gate.started.is_set() and child.status == WorkflowExecutionStatus.TIMED_OUT
    ts = store.tenant(agent.tenant)
    card = _card(ts, agent, result.wake_id)
    assert card.is_error and card.text == "timed_out: no result within 10s"
    assert card.meta["status"] == "timed_out"
    assert not [m for m in ts.memories(agent.name) if m.source.startswith("child:")]
    assert (result.status, result.model_calls, result.tool_calls) == ("done", 2, 1)


async def test_a_subdir_outside_the_parents_workdir_is_refused_before_a_child_starts(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    env = temporal_skipping
    agent = _delegating(agent, subdir="../outside")
    script = Script.parse([_delegate(), {"text": "Understood."}])
    async with worker(env.client, store, [agent], osim, script=script) as (queue, _):
        result = await wake(env.client, agent.runtime(), message("delegate the README"), queue)

    ts = store.tenant(agent.tenant)
    card = _card(ts, agent, result.wake_id)
    assert card.is_error
    assert card.text == (
        "refused: delegation 'facts': subdir '../outside' leaves scout's workdir; "
        "fix the Delegation's subdir"
    )
    with pytest.raises(UnknownAgentError):  # never registered: no child ran
        ts.get_agent(CHILD)
    assert (result.status, result.model_calls, result.tool_calls) == ("done", 2, 1)


@pytest.mark.parametrize("subdir", ["../outside", "/etc", "docs/../..", "link"])
def test_a_stored_bundle_whose_subdir_leads_out_is_refused(tmp_path: Path, subdir: str) -> None:
    """What ``child.prepare`` (and a worker rebuilding a child) checks: ``..``, an absolute
    path and a symlink out of the workdir are all refused; a directory inside is not."""
    agent = scout(tmp_path, tenant="unit")
    (tmp_path / "elsewhere").mkdir()
    (Path(agent.workdir) / "link").symlink_to(tmp_path / "elsewhere")
    bundle = _bundle(agent, subdir)
    with pytest.raises(UserError, match=f"subdir {subdir!r} leaves scout's workdir"):
        child_agent(agent, bundle)
    inside = child_agent(agent, _bundle(agent, "docs"))
    assert inside.workdir == str((Path(agent.workdir) / "docs").resolve())


async def test_on_invalid_report_hands_back_the_first_invalid_answer_without_a_retry(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    env = temporal_skipping
    agent = _delegating(agent, on_invalid="report", max_attempts=3)
    script = Script.parse(
        [
            _delegate(),
            {"text": "The README is about Lighthouse."},  # prose, not JSON
            {"text": "The child's answer was invalid. Next: read_file README.md"},
            {"text": json.dumps(ANSWER)},  # what a retry would have got
        ]
    )
    async with worker(env.client, store, [agent], osim, script=script) as (queue, _):
        result = await wake(env.client, agent.runtime(), message("delegate the README"), queue)
        child = await _child_result(env, agent)

    assert (child.status, child.attempts) == ("rejected", 1)
    ts = store.tenant(agent.tenant)
    assert not ts.model_calls(f"{CHILD}:2")
    card = _card(ts, agent, result.wake_id)
    assert card.is_error and card.text.startswith("rejected: invalid result for schema FileFacts")
    assert not [m for m in ts.memories(agent.name) if m.source.startswith("child:")]
    assert (result.status, result.model_calls) == ("done", 2)


def _bundle(agent: Agent, subdir: str) -> ChildBundle:
    return child_bundle(
        tenant=agent.tenant, parent=agent.name, child=CHILD, task="Key facts of README.md",
        frame="(frame)", tools=("read_file",), subdir=subdir, on_invalid="retry",
    )  # fmt: skip
