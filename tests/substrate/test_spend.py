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


def test_a_parents_spend_counts_its_childrens_and_no_one_elses(tenant: TenantStore) -> None:
    """Children (``<parent>/child/<n>``, nested too) spend on their parent's behalf; an agent
    whose name merely starts like the parent's, or like its pattern (``_`` is a LIKE
    wildcard), does not."""
    names = ("p_1", "p_1/child/1", "p_1/child/1/child/2", "pX1", "pX1/child/1", "p_10")
    for name in names:
        tenant.upsert_agent(name, model="m", provider="anthropic", instructions="", spec={})
    for n, (name, cost) in enumerate(zip(names, (1.0, 0.1, 0.01, 5.0, 6.0, 7.0), strict=True)):
        _wake(tenant, name, n + 1, MIDNIGHT + timedelta(minutes=n), [cost])
    parent = tenant.spend_since("p_1", MIDNIGHT)
    assert abs(parent.usd - 1.11) < 1e-9 and parent.tokens == 3 * 131
    child = tenant.spend_since("p_1/child/1", MIDNIGHT)
    assert abs(child.usd - 0.11) < 1e-9
