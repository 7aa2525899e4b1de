"""``TenantStore.spend_since``: what an agent's model calls cost, by the day its wakes started."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from wakeful.substrate.records import ModelCallRecord, Spend, WakeRecord
from wakeful.substrate.store import TenantStore

MIDNIGHT = datetime(2026, 3, 5, tzinfo=UTC)


def _wake(ts: TenantStore, agent: str, number: int, at: datetime, costs: list[float]) -> None:
    wake_id = f"{agent}:{number}"
    ts.start_wake(
        WakeRecord(
            wake_id=wake_id,
            agent=agent,
            session_id=f"{agent}:s0001",
            workflow_id="wf",
            number=number,
            goal={"kind": "message", "text": "hi"},
            started_at=at,
        )
    )
    for i, cost in enumerate(costs):
        ts.record_model_call(
            ModelCallRecord(
                agent=agent,
                wake_id=wake_id,
                step_key=f"{wake_id}:{i}:model",
                call_index=i,
                provider="anthropic",
                model="m",
                window_hash="w",
                output_hash="o",
                stop_reason="end_turn",
                input_tokens=100,
                output_tokens=10,
                cache_creation_input_tokens=20,
                cache_read_input_tokens=1,
                cost_usd=cost,
            )
        )


def test_spend_since_sums_the_calls_of_the_wakes_started_since(tenant: TenantStore) -> None:
    for name in ("a", "b"):
        tenant.upsert_agent(name, model="m", provider="anthropic", instructions="", spec={})
    _wake(tenant, "a", 1, MIDNIGHT - timedelta(minutes=1), [0.5])  # yesterday
    _wake(tenant, "a", 2, MIDNIGHT, [0.01, 0.02])
    _wake(tenant, "a", 3, MIDNIGHT + timedelta(hours=23), [0.004])
    _wake(tenant, "b", 1, MIDNIGHT + timedelta(hours=1), [7.0])  # another agent

    today = tenant.spend_since("a", MIDNIGHT)
    assert abs(today.usd - 0.034) < 1e-9 and today.tokens == 3 * 131
    assert tenant.spend_since("a", MIDNIGHT + timedelta(days=1)) == Spend()
    assert tenant.spend_since("nobody", MIDNIGHT) == Spend()
