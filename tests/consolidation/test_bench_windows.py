"""After each consolidation round of the consolidation benchmark's session, the agent's
next window — snapshot, retrieval over the event index, compile, as the compile activity
builds it — holds no event a summary retired: neither in the raw history nor among the
retrieval hits, though the index still holds the retired events and the question asks
for them."""

from __future__ import annotations

import uuid
from datetime import datetime

from benchmarks.consolidation_bench import SESSION, measure
from wakeful.activities.snapshot_input import build_snapshot
from wakeful.agents import Agent
from wakeful.compiler import BlockKind, Goal, GoalKind, Ledger, WindowPolicy, compile_window
from wakeful.substrate.embedders import HashingEmbedder
from wakeful.substrate.indexing import EventIndex, event_id_of, retrieve_into
from wakeful.substrate.store import Store, TenantStore
from wakeful.substrate.vectors.memory import MemoryVectorStore
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.tokenizers import BpeCounter

COUNTER = BpeCounter()


# Blocks that are events themselves (a memory's source is the event it was captured from).
RAW = frozenset(k.value for k in (BlockKind.TURN, BlockKind.TOOL_CALL, BlockKind.TOOL_RESULT))


def events_in(ledger: Ledger) -> set[int]:
    """The event ids of the window's included blocks: raw events and retrieval hits."""
    ids: set[int] = set()
    for row in ledger.included():
        if row.kind in RAW and row.source.startswith("events:") and row.source[7:].isdigit():
            ids.add(int(row.source[7:]))
        event = event_id_of(row.block_id.removeprefix("retrieved:"))
        if event is not None:
            ids.add(event)
    return ids


async def test_no_retired_event_reaches_a_window_after_any_round(
    store: Store, sim: SimulatorServer
) -> None:
    index = EventIndex(MemoryVectorStore(), HashingEmbedder(), count_tokens=COUNTER.count)
    policy = WindowPolicy.default()
    seen: list[tuple[int, int]] = []  # per round: events retired, events in the window

    async def index_the_day(ts: TenantStore, agent: Agent, now: datetime) -> None:
        # The day's wakes indexed what they saw before the round retired any of it.
        index.catch_up(ts, agent.name, upto=ts.max_event_id(agent.name))

    async def check(ts: TenantStore, agent: Agent, now: datetime) -> None:
        retired = {e.id for e in ts.events(agent.name) if e.retired_at is not None}
        assert retired, "the round retired nothing: the check would be empty"
        # Ask with the retired turns' own words: they are the best matches in the index.
        asked = [e.text for e in ts.events(agent.name) if e.id in retired][-6:]
        goal = Goal(kind=GoalKind.MESSAGE, text=" ".join(asked)[:2000])
        max_event_id = ts.max_event_id(agent.name)
        snapshot = build_snapshot(
            ts,
            agent.spec(),
            session_id=SESSION,
            wake_id=None,
            max_event_id=max_event_id,
            as_of=now,
            recent_limit=200,
            policy=policy,
        )
        snapshot, _ = retrieve_into(
            index,
            ts,
            snapshot,
            goal_text=goal.text,
            policy=policy,
            max_event_id=max_event_id,
            max_tokens=policy.retrieval.max_tokens,
        )
        # The index still holds the retired turns and ranks them for this question: only the
        # retrieval's filter keeps them out.
        found = index.retriever.candidates(
            goal.text, tenant=ts.name, agent=agent.name, token_cap=policy.retrieval.max_tokens
        )
        assert {event_id_of(c.hit.chunk_id) for c in found} & retired, "nothing retired found"
        window = compile_window(snapshot, goal, policy, now, counter=COUNTER)
        leaked = events_in(window.ledger) & retired
        assert not leaked, f"retired events in the window: {sorted(leaked)}"
        seen.append((len(retired), len(events_in(window.ledger))))

    await measure(
        store,
        sim,
        tenant=f"t-{uuid.uuid4().hex[:12]}",
        turns=300,
        api_key=uuid.uuid4().hex,
        before_round=index_the_day,
        after_round=check,
    )
    assert len(seen) == 3, seen
    assert seen[-1][0] > seen[0][0], seen  # later rounds retire more
    assert all(shown > 0 for _, shown in seen), seen
