"""Which blobs ``read_result`` may read for an agent: those its own events name as a
handle, a shortened tool result's or a user turn's too long for its window, and no
other blob of the tenant."""

from __future__ import annotations

from datetime import UTC, datetime

from tests.substrate.events import tool_event, turn_event
from wakeful.compiler.oversize import WHOLE_TEXT_META
from wakeful.substrate.store import TenantStore
from wakeful.tool_results import HANDLE_METAS, RESULT_BLOB_META

AT = datetime(2026, 11, 1, tzinfo=UTC)
WEBHOOK = "incident report line\n" * 4_000  # a user turn stored whole, shown in part


def test_an_agent_reads_the_handles_of_its_own_long_turns_and_results(
    tenant: TenantStore,
) -> None:
    for agent in ("owner", "peeker"):
        tenant.upsert_agent(agent, model="m", provider="anthropic", instructions="i", spec={})
    (turn,) = tenant.append_events("owner", [turn_event("t1", WEBHOOK, at=AT)])
    handle = turn.meta[WHOLE_TEXT_META]
    assert tenant.get_blob(handle) == WEBHOOK
    result = tool_event(
        "tool_result",
        "r1",
        "head ... tail",
        call_id="c1",
        tool="dump",
        at=AT,
        meta={RESULT_BLOB_META: "f" * 64},
    )
    tenant.append_events("owner", [result])
    with tenant.unit() as uow:
        assert uow.events.holds_result("owner", handle, HANDLE_METAS)
        assert uow.events.holds_result("owner", "f" * 64, HANDLE_METAS)
        # Another agent of the tenant, given the same hashes, reads neither.
        assert not uow.events.holds_result("peeker", handle, HANDLE_METAS)
        assert not uow.events.holds_result("peeker", "f" * 64, HANDLE_METAS)
