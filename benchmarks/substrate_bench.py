"""``wakeful bench substrate``: is the substrate fast enough that a compile never waits on it?

On a throwaway embedded Postgres and a Qdrant Edge shard, one agent gets ``events`` (100k)
synthetic conversation turns, a few hundred memories, decisions and summaries, and a wake in
progress. Measured:

* ``append``: events/s through ``TenantStore.append_events`` in batches of 1,000 (the import
  and bulk path), and one event per call (an activity recording one turn);
* ``snapshot``: ``build_snapshot`` for that agent - everything the compile activity loads
  before it compiles - p50/p99 over repeated loads;
* ``index``: chunks/s of the lazy event index catching up on all of it (embedding included);
* ``retrieval``: ``Retriever.retrieve`` in the index's configuration (the mode the embedder
  chose - BM25 alone for the hashing embedder - with neighbours and packing under a
  2,000-token cap) on the Edge shard holding every chunk, after ``optimize()``, p50/p99 over
  varied questions; the same with BM25 and dense rankings fused (``retrieve_hybrid``, the
  mode of a learned embedder); and one BM25 query alone. ``first_query_ms`` is the first
  retrieval after the shard is opened, which reads the agent's BM25 statistics once.

Targets: >= 5,000 events/s batched, snapshot load <= 20 ms, retrieval <= 10 ms (p50).
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from itertools import accumulate
from typing import Any

from benchmarks.recall_bench import temporary_store
from wakeful.activities.snapshot_input import build_snapshot
from wakeful.substrate.embedders import HashingEmbedder
from wakeful.substrate.indexing import EventIndex
from wakeful.substrate.records import (
    DecisionRecord,
    EventIn,
    HandoffBody,
    HandoffRecord,
    MemoryRecord,
    SummaryRecord,
    WakeRecord,
)
from wakeful.substrate.retrieval import RetrievalConfig, Retriever
from wakeful.substrate.store import TenantStore
from wakeful.substrate.vectors.base import FusionMode, VectorQuery
from wakeful.substrate.vectors.edge import EdgeVectorStore

__all__ = ["run"]

AGENT = "archivist"
SESSION_TURNS = 40
BATCH = 1_000
T0 = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
TARGETS = {"append_events_per_s": 5_000, "snapshot_p50_ms": 20.0, "retrieval_p50_ms": 10.0}


def _say(message: str) -> None:
    print(f"[substrate] {message}", file=sys.stderr, flush=True)


def _vocabulary(rnd: random.Random, size: int = 6_000) -> list[str]:
    syllables = "ka lo mi ne su ta ri po de la vo ze chi ru ban tor el ost ing er".split()
    words = {"".join(rnd.choices(syllables, k=rnd.randint(2, 4))) for _ in range(size * 2)}
    return sorted(words)[:size]


class _Talk:
    """Deterministic conversation-like turns: Zipf-distributed words, two speakers."""

    def __init__(self, seed: int = 7) -> None:
        self.rnd = random.Random(seed)
        self.words = _vocabulary(self.rnd)
        self.cumulative = list(accumulate(1.0 / (rank + 1) for rank in range(len(self.words))))

    def text(self, n: int) -> str:
        speaker = "Ana" if n % 2 == 0 else "Ben"
        words = self.rnd.choices(self.words, cum_weights=self.cumulative, k=self.rnd.randint(8, 30))
        return f"{speaker}: " + " ".join(words)

    def question(self) -> str:
        return "What did Ana say about " + " ".join(self.rnd.sample(self.words[50:2000], 3))


def _event(talk: _Talk, n: int, prefix: str = "ev") -> EventIn:
    session, turn = divmod(n, SESSION_TURNS)
    return EventIn(
        step_key=f"{prefix}:{n}",
        kind="turn",
        role="user" if n % 2 == 0 else "assistant",
        text=talk.text(n),
        session_id=f"s{session}",
        event_time=T0 + timedelta(days=session, seconds=turn),
    )


def _timed(fn: Callable[[], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def _stats(ms: list[float]) -> dict[str, float]:
    ms = sorted(ms)
    return {
        "p50_ms": round(statistics.median(ms), 2),
        "p99_ms": round(ms[min(len(ms) - 1, int(len(ms) * 0.99))], 2),
    }


def _append(ts: TenantStore, talk: _Talk, events: int) -> dict[str, Any]:
    spent = 0.0  # only the appends are timed, not making up the events
    for start in range(0, events, BATCH):
        batch = [_event(talk, n) for n in range(start, min(events, start + BATCH))]
        t = time.perf_counter()
        ts.append_events(AGENT, batch)
        spent += time.perf_counter() - t
        if start % 20_000 == 0:
            _say(f"appended {start + BATCH:,} / {events:,}")
    batched = events / spent
    singles = [_event(talk, events + n, "single") for n in range(300)]
    t = time.perf_counter()
    for one in singles:
        ts.append_events(AGENT, [one])
    single = len(singles) / (time.perf_counter() - t)
    return {
        "events": events,
        "batch": BATCH,
        "batched_events_per_s": round(batched),
        "single_events_per_s": round(single),
    }


def _knowledge(ts: TenantStore, talk: _Talk, horizon: int, now: datetime) -> WakeRecord:
    """What a long-lived agent accumulates besides events, and a wake in progress."""
    for n in range(30):
        ts.register_decision(DecisionRecord(decision_id=f"D-{n}", agent=AGENT, text=talk.text(n)))
    for n in range(200):
        ts.remember(
            MemoryRecord(
                agent=AGENT,
                step_key=f"mem:{n}",
                key=f"fact-{n % 150}",
                text=talk.text(n),
                source="bench",
                captured_at=T0 + timedelta(hours=n),
            )
        )
    span = horizon // 60
    for n in range(50):
        ts.add_summary(
            SummaryRecord(
                agent=AGENT,
                step_key=f"sum:{n}",
                level=1,
                span_start=n * span + 1,
                span_end=(n + 1) * span,
                text=" ".join(talk.text(k) for k in range(6)),
            ),
            retire_span=False,
            at=now,
        )
    ts.write_handoff(
        HandoffRecord(
            agent=AGENT,
            session_id="previous",
            wake_id="w-0",
            step_key="handoff:0",
            body=HandoffBody(goal="Keep the archive", current_state=talk.text(1)),
        )
    )
    wake = ts.start_wake(
        WakeRecord(
            wake_id="w-1",
            agent=AGENT,
            session_id="current",
            workflow_id="bench",
            number=1,
            goal={"kind": "message", "text": "hello"},
            started_at=now,
        )
    )
    current = [_event(talk, 10**7 + n, "wake") for n in range(6)]
    ts.append_events(
        AGENT, [e.model_copy(update={"wake_id": "w-1", "session_id": "current"}) for e in current]
    )
    return wake


def _retrieval(
    ts: TenantStore, talk: _Talk, root: Any, horizon: int, samples: int
) -> dict[str, Any]:
    vectors = EdgeVectorStore(root / "qdrant")
    try:
        index = EventIndex(vectors, HashingEmbedder(), count_tokens=lambda s: len(s) // 4)
        t = time.perf_counter()
        chunks = index.catch_up(ts, AGENT, upto=horizon)
        indexed = time.perf_counter() - t
        _say(f"indexed {chunks:,} chunks in {indexed:.1f}s; optimizing")
        t = time.perf_counter()
        vectors.optimize()
        optimized = time.perf_counter() - t
        questions = [talk.question() for _ in range(samples)]
        retriever = index.retriever

        def retrieve(q: str) -> None:
            retriever.retrieve(
                q, tenant=ts.name, agent=AGENT, token_cap=2_000, count_tokens=lambda s: len(s) // 4
            )

        hybrid = Retriever(vectors, index.embedder, RetrievalConfig(mode=FusionMode.HYBRID))

        def retrieve_hybrid(q: str) -> None:
            hybrid.retrieve(
                q, tenant=ts.name, agent=AGENT, token_cap=2_000, count_tokens=lambda s: len(s) // 4
            )

        def bm25(q: str) -> None:
            vectors.query(
                VectorQuery(tenant=ts.name, agent=AGENT, mode=FusionMode.SPARSE, text=q, limit=100)
            )

        (first,) = _timed(lambda: retrieve(questions[0]), 1)
        for q in questions[: max(1, samples // 10)]:  # warm-up: first touches of the shard's files
            retrieve(q)
        it = iter(questions)
        full = _timed(lambda: retrieve(next(it)), len(questions))
        it = iter(questions)
        fused = _timed(lambda: retrieve_hybrid(next(it)), len(questions))
        it = iter(questions)
        single = _timed(lambda: bm25(next(it)), len(questions))
        return {
            "chunks": vectors.count(ts.name, AGENT),
            "index_chunks_per_s": round(chunks / indexed),
            "optimize_s": round(optimized, 1),
            "first_query_ms": round(first, 1),
            "retrieve": _stats(full) | {"token_cap": 2_000, "mode": index.mode.value},
            "retrieve_hybrid": _stats(fused) | {"token_cap": 2_000},
            "bm25_query": _stats(single) | {"limit": 100},
        }
    finally:
        vectors.close()


def run(events: int = 100_000, samples: int = 200) -> dict[str, Any]:
    """Append throughput, snapshot load and retrieval latency at ``events`` events;
    ``samples`` timed snapshot loads and retrievals each."""
    if events < 1_000:
        raise ValueError(f"events must be at least 1000, got {events}")
    talk = _Talk()
    with temporary_store("wksb") as (store, root):
        ts = store.tenant("bench")
        spec = {"name": AGENT, "model": "m", "provider": "anthropic", "instructions": "Archive."}
        ts.upsert_agent(AGENT, model="m", provider="anthropic", instructions="", spec=spec)
        append = _append(ts, talk, events)
        horizon = ts.max_event_id(AGENT)
        now = T0 + timedelta(days=events // SESSION_TURNS + 1)
        wake = _knowledge(ts, talk, horizon, now)
        horizon = ts.max_event_id(AGENT)
        _say("loading snapshots")

        def load() -> None:
            # As the compile activity reads: the knowledge revision first, then at it.
            with ts.unit() as uow:
                build_snapshot(
                    ts.within(uow),
                    spec | {"tools": []},
                    session_id=wake.session_id,
                    wake_id=wake.wake_id,
                    max_event_id=horizon,
                    as_of=now,
                    recent_limit=200,
                    revision=uow.knowledge.knowledge_revision(AGENT),
                )

        _timed(load, 5)
        snapshot = _stats(_timed(load, samples))
        size = len(
            build_snapshot(
                ts,
                spec | {"tools": []},
                session_id=None,
                wake_id=wake.wake_id,
                max_event_id=horizon,
                as_of=now,
                recent_limit=200,
            ).blocks
        )
        retrieval = _retrieval(ts, talk, root, horizon, samples)
        stored = ts.count_events(AGENT)
    measured = {
        "append_events_per_s": append["batched_events_per_s"],
        "snapshot_p50_ms": snapshot["p50_ms"],
        "retrieval_p50_ms": retrieval["retrieve"]["p50_ms"],
    }
    met = {
        "append_events_per_s": measured["append_events_per_s"] >= TARGETS["append_events_per_s"],
        "snapshot_p50_ms": measured["snapshot_p50_ms"] <= TARGETS["snapshot_p50_ms"],
        "retrieval_p50_ms": measured["retrieval_p50_ms"] <= TARGETS["retrieval_p50_ms"],
    }
    return {
        "events": events,
        "append": append,
        "snapshot": snapshot | {"events": stored, "blocks_without_session": size},
        "retrieval": retrieval,
        "targets": TARGETS,
        "measured": measured,
        "met": met,
    }
