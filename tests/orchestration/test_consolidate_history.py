"""A wake whose window carried ``budget.consolidate_at`` tokens of history ends by starting a
consolidation round, which may take history younger than the schedule's ``min_age``: a long
session no longer carries its whole transcript on every call."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from pathlib import Path

from temporalio.client import WorkflowFailureError
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from tests.conversation import conversation
from tests.e2e.harness import message
from tests.orchestration.helpers import worker
from wakeful.agents import Agent
from wakeful.compiler import WindowPolicy
from wakeful.consolidation.contracts import ConsolidationResult
from wakeful.consolidation.policy import ConsolidationPolicy
from wakeful.substrate.indexing import load_hits
from wakeful.substrate.records import EventIn
from wakeful.substrate.store import Store
from wakeful.substrate.vectors.edge import EdgeVectorStore
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.workflows.consolidation import consolidation_workflow_id

# One turn in four states a fact; the rest is talk a summary drops, so the summary is much
# smaller than the span it replaces (the gate refuses one that is not).
LINES = (
    "The payment queue drains steadily: batch {n} cleared and the workers keep up.",
    "Thanks, that matches what the dashboard shows this morning.",
    "Good to hear; the canary region looks calm as well.",
    "Sounds good, let's keep an eye on it through the day.",
)


def _history(session_id: str, count: int) -> list[EventIn]:
    """``count`` alternating user/assistant turns of the agent's open session, minutes old."""
    texts = [LINES[n % len(LINES)].format(n=n) for n in range(count)]
    start = datetime.now(UTC) - timedelta(minutes=30)
    return conversation(
        texts, session_id=session_id, start=start, step_key="seed:", apart=timedelta(seconds=1)
    )


async def _pressure_round(env: WorkflowEnvironment, agent: Agent) -> ConsolidationResult | None:
    handle = env.client.get_workflow_handle(
        consolidation_workflow_id(agent.tenant, agent.name) + ":pressure",
        result_type=ConsolidationResult,
    )
    try:
        return await handle.result()
    except (RPCError, WorkflowFailureError):
        return None


async def test_a_full_history_is_consolidated_after_the_wake(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    osim: SimulatorServer,
    agent: Agent,
    tmp_path: Path,
) -> None:
    # On the dev server: the time-skipping server breaks once a parent has closed over an
    # abandoned child (see tests/consolidation/test_workflow_pressure.py).
    env = temporal_dev
    tight = WindowPolicy.default().model_copy(
        update={"budget": WindowPolicy.default().budget.model_copy(update={"consolidate_at": 400})}
    )
    full = dataclasses.replace(agent, policy="tight")
    ts = store.tenant(agent.tenant)
    vectors = EdgeVectorStore(tmp_path / "qdrant")
    async with worker(
        env.client, store, [full], osim, policies={"tight": tight}, vectors=vectors
    ) as (queue, _):
        first = await wake(env.client, full.runtime(), message("How is the queue?"), queue)
        assert await _pressure_round(env, agent) is None  # a short history: no round
        ts.append_events(agent.name, _history(first.session_id, 60))
        second = await wake(env.client, full.runtime(), message("Anything new?"), queue)
        result = await _pressure_round(env, agent)
        # Asked about what the summaries now stand for: retrieval must not bring the
        # retired turns back beside them.
        ask = "Did payment queue batch 4 clear, and do the workers keep up?"
        third = await wake(env.client, full.runtime(), message(ask), queue)
    vectors.close()
    assert first.status == second.status == third.status == "done"
    assert result is not None and result.reason == "pressure"
    assert result.spans >= 1, result
    summaries = ts.summaries(agent.name)
    assert summaries, "the round wrote no summary"
    retired = [e for e in ts.events(agent.name) if e.retired_at is not None]
    # Younger than the schedule's min_age (1 h), consolidated all the same ...
    assert retired and all(
        e.event_time > datetime.now(UTC) - ConsolidationPolicy().min_age for e in retired
    )
    # ... and the newest keep_recent_events stay raw.
    live = ts.events(agent.name, include_retired=False)
    assert len(live) >= ConsolidationPolicy().keep_recent_events

    (compiled, *_) = ts.compiles(third.wake_id)
    assert compiled.retrieval_hash is not None
    record = load_hits(ts.get_blob(compiled.retrieval_hash))
    hits = record.hits
    brought = {int(h.chunk_id.removeprefix("ev:")) for h in hits}
    assert not brought & {e.id for e in retired}


async def test_a_trigger_whose_action_is_compact_consolidates_after_the_wake(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    osim: SimulatorServer,
    agent: Agent,
) -> None:
    """A short history, far below ``budget.consolidate_at``: a goal firing a trigger with
    ``action = "compact"`` starts the round all the same, with the agent's own
    ``consolidation_keep_events``; a goal that fires nothing does not."""
    from wakeful.compiler import load_policy
    from wakeful.compiler.blocks import Goal, GoalKind
    from wakeful.contracts import Trigger

    env = temporal_dev
    compacting = load_policy(
        '[[triggers]]\nname = "tidy"\ntask_classes = ["tidy"]\naction = "compact"\n'
    )
    tidy = dataclasses.replace(agent, policy="compacting", consolidation_keep_events=4)
    ts = store.tenant(agent.tenant)
    async with worker(env.client, store, [tidy], osim, policies={"compacting": compacting}) as (
        queue,
        _,
    ):
        first = await wake(env.client, tidy.runtime(), message("How is the queue?"), queue)
        ts.append_events(agent.name, _history(first.session_id, 24))
        plain = await wake(env.client, tidy.runtime(), message("Anything new?"), queue)
        assert await _pressure_round(env, agent) is None  # nothing fired: no round
        goal = Goal(kind=GoalKind.MESSAGE, text="Tidy up the notes.", task_class="tidy")
        trigger = Trigger(goal=goal, idempotency_key="tidy-1")
        tidied = await wake(env.client, tidy.runtime(), trigger, queue)
        result = await _pressure_round(env, agent)
    assert first.status == plain.status == tidied.status == "done"
    # Fewer events than the default 40 kept raw: a span at all is the agent's 4 at work.
    assert len(ts.events(agent.name)) < ConsolidationPolicy().keep_recent_events
    assert result is not None and result.reason == "pressure" and result.spans >= 1, result
    assert ts.summaries(agent.name), "the round wrote no summary"
    assert len(ts.events(agent.name, include_retired=False)) >= 4
