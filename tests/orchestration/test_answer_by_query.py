"""A wake's answer is written into the agent's history once: the model call's result holds
it, the wake update answers without it (``output_by_query``), and Wakeful's client reads it
with the workflow's ``result`` query, so callers get the same ``WakeResult`` as before."""

from __future__ import annotations

import uuid

from temporalio.api.common.v1 import Payload
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message
from tests.orchestration.helpers import wakeful_client, worker
from wakeful.agents import Agent
from wakeful.contracts import WakeResult, with_answer, without_answer
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import Client, wake
from wakeful.worker.codec import DeflateCodec, data_converter
from wakeful.workflows.agent import workflow_id


async def _texts(payloads: list[Payload]) -> list[str]:
    decoded = await DeflateCodec().decode(payloads)
    return [p.data.decode() for p in decoded]


async def test_the_answer_is_in_the_history_once_and_the_client_still_returns_it(
    temporal_dev: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    client = await wakeful_client(temporal_dev)
    async with worker(client, store, [agent], osim) as (queue, _):
        result = await wake(client, agent.runtime(), message("list_dir .", uuid.uuid4().hex), queue)
        handle = await Client(client, task_queue=queue).start(agent, "list_dir .", key="k-2")
        second = await handle.result()
    assert result.status == "done" and result.output and not result.output_by_query
    assert second.status == "done" and second.output and not second.output_by_query
    history = await client.get_workflow_handle(
        workflow_id(agent.tenant, agent.name)
    ).fetch_history()
    results = [
        p
        for e in history.events
        for p in [
            *e.activity_task_completed_event_attributes.result.payloads,
            *(p for v in e.marker_recorded_event_attributes.details.values() for p in v.payloads),
        ]
    ]
    updates = [
        e.workflow_execution_update_completed_event_attributes.outcome.success
        for e in history.events
        if e.HasField("workflow_execution_update_completed_event_attributes")
    ]
    answer = result.output.replace("\n", "\\n")
    # Each wake's answer is in its model call's result, and in no update's result.
    assert sum(answer in t for t in await _texts(results)) == 2
    assert len(updates) == 2
    assert not any(answer in t for t in await _texts([p for u in updates for p in u.payloads]))
    raw = data_converter.payload_converter.from_payloads(
        await DeflateCodec().decode(updates[0].payloads),
        [WakeResult],
    )[0]
    assert raw.output == "" and raw.output_by_query
    assert raw.model_copy(update={"output": result.output, "output_by_query": False}) == result


def test_a_result_the_workflow_no_longer_remembers_says_its_answer_is_not_there() -> None:
    whole = WakeResult(
        wake_id="a:1",
        number=1,
        session_id="a:s0001",
        status="done",
        model_calls=1,
        tool_calls=0,
        input_tokens=1,
        output_tokens=1,
        cache_read_input_tokens=0,
        cache_creation_input_tokens=0,
        cost_usd=0.0,
        handoff_id=1,
        idempotency_key="k",
        output="Checkout is healthy.",
    )
    sent = without_answer(whole)
    assert sent.output == "" and sent.output_by_query
    assert with_answer(sent, whole) == whole
    gone = with_answer(sent, None)
    assert gone.output == "" and gone.output_truncated and not gone.output_by_query
    assert with_answer(whole, None) == whole  # a result with its answer is left as it is
