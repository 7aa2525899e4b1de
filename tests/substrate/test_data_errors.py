"""A write Postgres refuses for its data fails the wake at once, it is not retried forever.

Substrate writes run as local activities under ``STORE_RETRY``, which retries everything but
``DETERMINISTIC_ERRORS``. Temporal names a Python exception's failure by its class name, so
the SQLAlchemy ``DataError`` (a value out of range, text Postgres cannot store) must be on
that list by that name: then the workflow gets the error after one attempt and parks the
wake with it, instead of stalling every later trigger behind a retry that cannot succeed.
"""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest
from temporalio import activity, workflow
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from wakeful.substrate.records import WakeRecord
from wakeful.substrate.store import Store
from wakeful.workflows.retries import STORE_RETRY, STORE_TIMEOUT


@workflow.defn(name="DataErrorProbe", sandboxed=False)
class _Probe:
    @workflow.run
    async def run(self, tenant: str) -> str:
        return str(
            await workflow.execute_local_activity(
                "start-impossible-wake",
                tenant,
                start_to_close_timeout=STORE_TIMEOUT,
                retry_policy=STORE_RETRY,
            )
        )


async def test_a_data_error_is_not_retried(temporal_dev: WorkflowEnvironment, store: Store) -> None:
    tenant = f"t-{uuid.uuid4().hex[:12]}"
    ts = store.tenant(tenant)
    ts.upsert_agent("a1", model="m", provider="anthropic", instructions="-", spec={})
    attempts: list[int] = []

    @activity.defn(name="start-impossible-wake")
    def start_impossible_wake(of_tenant: str) -> str:
        attempts.append(activity.info().attempt)
        wake = WakeRecord(
            wake_id="a1:1",
            agent="a1",
            session_id="a1:s1",
            workflow_id="wf",
            number=2**40,  # the column is a 4-byte integer: "integer out of range"
            goal={},
            started_at=datetime(2026, 1, 1, tzinfo=UTC),
        )
        return store.tenant(of_tenant).start_wake(wake).wake_id

    queue = f"q-{uuid.uuid4().hex[:8]}"
    client = temporal_dev.client
    async with Worker(
        client,
        task_queue=queue,
        workflows=[_Probe],
        activities=[start_impossible_wake],
        activity_executor=ThreadPoolExecutor(2),
    ):
        with pytest.raises(WorkflowFailureError) as failed:
            await client.execute_workflow(
                _Probe.run,
                tenant,
                id=f"probe-{uuid.uuid4().hex}",
                task_queue=queue,
                # A failure timeout only: a retried DataError would run into it.
                execution_timeout=timedelta(seconds=60),
            )
    cause = failed.value.cause
    if isinstance(cause, ActivityError):
        cause = cause.cause
    assert isinstance(cause, ApplicationError) and cause.type == "DataError"
    assert cause.non_retryable is False  # refused by the policy's list, not by the raiser
    assert attempts == [1]
