"""One legal-size webhook leaves its agent able to wake: in real wakes (dev server,
Postgres, the provider simulator, whose extractive summariser keeps every sentence that
holds a number), a 262,142-character webhook text — under the ingress's 256 KiB limit —
is stored whole and shown head and tail with a handle; consolidation writes no summary
that is not much smaller than what it replaces; and the wakes after it end ``done``, their
windows well inside the wake's token budget, instead of ``token_budget`` (before, the
webhook's own wake and every wake after a consolidation carried ~70k tokens of it)."""

from __future__ import annotations

import uuid
from datetime import timedelta

from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message, running_worker
from wakeful import Agent, AgentRegistry
from wakeful.compiler.blocks import Goal, GoalKind
from wakeful.consolidation.contracts import ConsolidationInput
from wakeful.consolidation.policy import ConsolidationPolicy
from wakeful.contracts import Trigger
from wakeful.substrate.store import Store
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.tokenizers import BpeCounter
from wakeful.worker.client import wake
from wakeful.worker.serve import register_agent
from wakeful.workflows.consolidation import ConsolidationWorkflow, consolidation_workflow_id

WEBHOOK_CHARS = 262_142  # under the ingress's 256 KiB (262,144-byte) body limit
LINE = "{n:06d} parcel {n} scanned at depot {d} with weight {w} g.\n"
WAKE_TOKENS = 40_000  # the agent's max_tokens_per_wake
POLICY = ConsolidationPolicy(keep_recent_events=2, min_age=timedelta(0), span_min_events=2)


def webhook_text() -> str:
    lines, size, n = [], 0, 0
    while size < WEBHOOK_CHARS:
        line = LINE.format(n=n, d=n % 40, w=100 + n % 900)
        lines.append(line)
        size += len(line)
        n += 1
    return "".join(lines)[:WEBHOOK_CHARS]


async def test_a_legal_size_webhook_leaves_the_agent_able_to_wake(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer
) -> None:
    text = webhook_text()
    assert len(text) == WEBHOOK_CHARS
    agent = Agent(
        name="intake",
        instructions="Triage parcel scans.",
        tenant=f"hook-{uuid.uuid4().hex[:8]}",
        max_tokens_per_wake=WAKE_TOKENS,
    )
    register_agent(store.tenant(agent.tenant), agent)
    client = temporal_dev.client
    hook = Trigger(goal=Goal(kind=GoalKind.WEBHOOK, text=text), idempotency_key=uuid.uuid4().hex)
    key = uuid.uuid4().hex
    # The model answers each wake in words (a call of read_result, which the note names,
    # would be fair too, but it is the window's size this test is about).
    sim.simulator.set_script(Script.parse({"default": "echo"}), scope=key)
    async with running_worker(client, store, AgentRegistry([agent]), sim, key) as queue:
        first = await wake(client, agent.runtime(), hook, queue)
        assert first.status == "done", first.status  # its own window fits the wake
        before = [
            await wake(client, agent.runtime(), message(f"any news {n}?"), queue) for n in range(3)
        ]
        consolidated = await client.execute_workflow(
            ConsolidationWorkflow.run,
            ConsolidationInput(runtime=agent.runtime(), policy=POLICY),
            id=consolidation_workflow_id(agent.tenant, agent.name),
            task_queue=queue,
        )
        after = [
            await wake(client, agent.runtime(), message(f"status {n}?"), queue) for n in range(3)
        ]

    statuses = [w.status for w in (first, *before, *after)]
    assert statuses == ["done"] * 7, statuses
    ts = store.tenant(agent.tenant)
    (ask, *_) = ts.events(agent.name, wake_id=first.wake_id)
    assert text in ask.text  # the event holds the webhook whole...
    assert text in ts.get_blob(ask.meta["text_blob"])  # ...and so does its handle
    # Consolidation summarised the later turns, and refused to keep the webhook's span as
    # a summary hardly smaller than it (the extractive summariser keeps every numbered line).
    assert (consolidated.spans, consolidated.accepted, consolidated.rejected) == (2, 1, 1)
    (why,) = consolidated.rejections
    assert why.startswith("size: ") and "it replaces" in why, why
    counter = BpeCounter()
    for s in ts.summaries(agent.name):
        assert counter.count(s.text) < 10_000, (s.level, len(s.text))
    for w in (first, *before, *after):
        assert all(c.input_tokens < WAKE_TOKENS for c in ts.compiles(w.wake_id)), w.status
