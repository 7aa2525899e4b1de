"""The cache benchmark's substrate view serves the event index as the worker's store does:
its agents' events are indexed and retrieved, and they have no documents."""

from __future__ import annotations

from benchmarks.cache_substrate import AGENT, MemorySubstrate, at
from benchmarks.cache_wakeful import StrategyView
from wakeful.substrate.embedders import HashingEmbedder
from wakeful.substrate.indexing import EventIndex
from wakeful.substrate.records import EventIn
from wakeful.substrate.vectors.memory import MemoryVectorStore


def test_the_view_is_indexed_and_retrieved_from() -> None:
    shared = MemorySubstrate()
    (fact,) = shared.append_events(
        AGENT,
        [
            EventIn(
                step_key="e1",
                kind="turn",
                role="user",
                text="The deploy key rotates every Tuesday.",
                session_id="s1",
                event_time=at(0),
            )
        ],
    )
    view = StrategyView(shared)
    index = EventIndex(MemoryVectorStore(), HashingEmbedder(dim=64), count_tokens=len)
    hits = index.gather(
        view,  # type: ignore[arg-type]
        AGENT,
        query="when does the deploy key rotate",
        max_event_id=fact.id,
        token_cap=1_000,
    )
    assert [h.chunk_id for h in hits] == [f"ev:{fact.id}"]
