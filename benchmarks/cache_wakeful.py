"""Wakeful's strategy in the cache benchmark: the production compile path, in memory.

Each call builds its snapshot with the worker's own
:func:`~wakeful.activities.compile.build_snapshot`, and the first call of a wake gathers
evidence: for a session with scripted documents, those documents as ``retrieved`` blocks
(as the retriever's ``to_block`` makes them: the same chunk keeps its id across wakes);
otherwise real retrieval, the worker's :func:`~wakeful.substrate.indexing.retrieve_into`
over an :class:`~wakeful.substrate.indexing.EventIndex` of the session's events (BM25 and
hashing vectors in an in-process Qdrant Edge shard, the worker's defaults). The window is
compiled with ``compile_window``, and the evidence it brought is recorded with the wake
exactly as the compile activity records it (:func:`~wakeful.activities.compile.evidence_event`),
so later calls send it again in place.

Every strategy reads one shared substrate; a compiled strategy's recorded evidence is its
own, so each keeps it in a :class:`StrategyView` of the substrate, at an event id the
substrate reserves per call (:meth:`MemorySubstrate.slot`).

Sessions follow the agent workflow: a gap past the worker's idle limit (the shape's new
session) ends the session only when pacing prices a handoff cheaper than continuing it
(:meth:`Wakeful.session_of`; the default agent sets no ``handoff_after_idle``), priced as
the workflow prices it, at the idle timer and again at the next wake, from a clock kept
as the workflow keeps it (with the compile activity's ``fresh_tokens``).

Options exist for what-if variants (:mod:`benchmarks.cache_variants`): a different
event-tail bound or page, and a renderer override; and, for comparison in tests, sessions
that always end at the idle limit (``continue_past_idle=False``).
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Collection, Iterator, Sequence
from datetime import timedelta
from typing import Any

from benchmarks.cache_session import AgentSession, Wake
from benchmarks.cache_shapes import SESSION_IDLE_S
from benchmarks.cache_strategies import CallContext, Plan, Strategy
from benchmarks.cache_substrate import AGENT, MemorySubstrate, at, goal_of
from wakeful.activities.compile import breakpoint_refs, evidence_event
from wakeful.activities.snapshot_input import build_snapshot
from wakeful.compiler import (
    Block,
    BlockKind,
    CompiledWindow,
    CountingCache,
    Renderer,
    TokenCounter,
    WindowPolicy,
    compile_window,
)
from wakeful.contracts import CallModelOut, CompileOut
from wakeful.providers.base import Usage
from wakeful.substrate.documents_repo import StoredDocChunk
from wakeful.substrate.embedders import HashingEmbedder
from wakeful.substrate.indexing import EventIndex, retrieve_into
from wakeful.substrate.records import EventIn, StoredEvent
from wakeful.substrate.snapshot import RECENT_LIMIT, RECENT_PAGE
from wakeful.substrate.vectors.edge import EdgeVectorStore
from wakeful.testing.memory import recent_tail, select_events
from wakeful.workflows.cache import rates_for, update_clock, wake_cache
from wakeful.workflows.pacing import CacheClock, CacheWrite, PacingInput, PacingPolicy, decide

__all__ = ["RETRIEVAL_MAX_TOKENS", "WORKER_RECENT_LIMIT", "StrategyView", "Wakeful"]

WORKER_RECENT_LIMIT = RECENT_LIMIT  # ActivityDeps.recent_limit's default: what a worker loads
RETRIEVAL_MAX_TOKENS = 16_000  # ActivityDeps.retrieval_max_tokens' default


class StrategyView:
    """The shared substrate plus one strategy's recorded evidence events.

    Reads that return events merge the strategy's own (an evidence event is live while its
    wake's ask is, so consolidation retires it with its wake); everything else is the
    shared substrate's. The event index's cursors and retrieval records are the
    strategy's own too.
    """

    def __init__(self, shared: MemorySubstrate) -> None:
        self.shared = shared
        self.name = shared.name
        self.own: list[StoredEvent] = []
        self._cursors: dict[str, int] = {}

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.shared, attr)

    # TenantStore's unit-of-work shape, answered with this view (not the shared substrate,
    # which ``__getattr__`` would give): a snapshot's sources read through what these return.
    @contextlib.contextmanager
    def unit(self) -> Iterator[StrategyView]:
        yield self

    def within(self, unit: StrategyView) -> StrategyView:
        return self

    def standalone(self) -> StrategyView:
        return self

    def _merged(self, events: list[StoredEvent], max_id: int | None) -> list[StoredEvent]:
        asks = {e.wake_id: e for e in self.shared.events(AGENT) if e.kind == "turn"}
        mine = []
        for e in self.own:
            if max_id is not None and e.id > max_id:
                continue
            ask = asks.get(e.wake_id)
            if ask is not None and ask.retired_at is not None:
                e = e.model_copy(update={"retired_at": ask.retired_at})
            mine.append(e)
        return sorted(events + mine, key=lambda e: e.id) if mine else events

    def events(
        self,
        agent: str,
        *,
        wake_id: str | None = None,
        max_id: int | None = None,
        include_retired: bool = True,
        limit: int | None = None,
        newest: bool = False,
    ) -> list[StoredEvent]:
        merged = self._merged(self.shared.events(agent, max_id=max_id), max_id)
        return select_events(
            merged, wake_id=wake_id, include_retired=include_retired, limit=limit, newest=newest
        )

    def events_by_ids(self, agent: str, ids: Sequence[int]) -> list[StoredEvent]:
        wanted = set(ids)
        return [e for e in self.events(agent) if e.id in wanted]

    def recent_events(
        self,
        agent: str,
        *,
        max_id: int,
        limit: int,
        session_id: str | None = None,
        page: int = 1,
    ) -> list[StoredEvent]:
        merged = self._merged(self.shared.events(agent, max_id=max_id), max_id)
        return recent_tail(merged, max_id=max_id, limit=limit, session_id=session_id, page=page)

    def record(self, event: StoredEvent) -> None:
        if all(e.step_key != event.step_key for e in self.own):
            self.own.append(event)

    # --- the event index's bookkeeping (EventIndex.catch_up, retrieve_into) ---------------

    def index_cursor(self, agent: str, collection: str) -> int:
        return self._cursors.get(collection, 0)

    def set_index_cursor(self, agent: str, collection: str, last_event_id: int) -> None:
        self._cursors[collection] = max(self._cursors.get(collection, 0), last_event_id)

    def reset_index_cursor(self, agent: str, collection: str) -> None:
        self._cursors[collection] = 0

    # The benchmark's agents have no documents (``wakeful docs``): nothing to index, no hit
    # of one to check.
    def max_doc_chunk_id(self, agent: str) -> int:
        return 0

    def doc_chunks(
        self, agent: str, *, after_id: int = 0, limit: int = 1000, live_only: bool = True
    ) -> list[StoredDocChunk]:
        return []

    def live_doc_chunks(self, agent: str, ids: Collection[int]) -> set[int]:
        return set()

    def superseded_doc_chunk_count(self, agent: str, *, upto_id: int) -> int:
        return 0

    def superseded_doc_chunks(self, agent: str, *, upto_id: int) -> list[int]:
        return []

    def put_blob(self, kind: str, content: str) -> str:
        """The worker keeps retrieval records for replays; the benchmark needs none."""
        return f"{kind}:{len(content)}"


class Wakeful(Strategy):
    """``recent_limit`` and ``recent_page`` bound raw events per snapshot as the worker
    does; ``renderer`` overrides the provider renderer (the compiler's extension point)."""

    def __init__(
        self,
        session: AgentSession,
        policy: WindowPolicy,
        counter: TokenCounter,
        *,
        name: str = "wakeful",
        recent_limit: int = WORKER_RECENT_LIMIT,
        recent_page: int = RECENT_PAGE,
        renderer: Renderer | None = None,
        adaptive_ttl: bool = True,
        continue_past_idle: bool = True,
    ) -> None:
        self.name = name
        self.continue_past_idle = continue_past_idle
        self.session_number = 0
        self._shape_session: int | None = None
        self._last_wake: Wake | None = None
        self.continued_past_idle: list[int] = []  # wake numbers that continued a session
        self.idle_reasons: list[str] = []  # pacing's reason at each idle limit passed
        self.policy = policy
        self.adaptive_ttl = adaptive_ttl
        self.clock = CacheClock()
        self.rates = rates_for("anthropic", session.model)
        self._policy = policy
        self._wake_policy = policy  # the TTLs of a wake's later calls
        self.writes: list[CacheWrite] = []  # each wake's first-call write decision
        self.last_reply = ""  # the text of the reply to the latest window
        self.counter = counter
        self.recent_limit = recent_limit
        self.recent_page = recent_page
        self.renderer = renderer
        self.cache = CountingCache()
        self._interned: dict[tuple[str, bool, str], Block] = {}
        self.windows: list[CompiledWindow] = []
        self.scripted = any(w.docs for w in session.wakes)
        self._view: StrategyView | None = None
        self._index: EventIndex | None = None
        self._index_dir: str | None = None
        self.spec = {
            "name": AGENT,
            "model": session.model,
            "provider": "anthropic",
            "instructions": session.instructions,
            "tools": [dict(t) for t in session.tools],
        }

    @property
    def call_policy(self) -> WindowPolicy:
        """The policy of the latest call: the strategy's, with pacing's TTLs."""
        return self._policy

    def recorded_evidence_ids(self) -> set[str]:
        """Block ids of the evidence this strategy recorded with its wakes, which later
        calls send again among the wake's turns."""
        return {f"ev:{e.id}" for e in self._view.own} if self._view is not None else set()

    def view(self, shared: MemorySubstrate) -> StrategyView:
        if self._view is None or self._view.shared is not shared:
            self._view = StrategyView(shared)
        return self._view

    def plan(self, ctx: CallContext) -> Plan:
        sub = self.view(ctx.substrate)
        call_index = ctx.turn.index - ctx.wake.turns[0].index
        slot = ctx.substrate.slot(f"{ctx.ref.wake_id}:{call_index}")
        max_event_id = sub.max_event_id(AGENT)
        snapshot = build_snapshot(
            sub,  # type: ignore[arg-type]  # the TenantStore reads build_snapshot makes
            self.spec,
            session_id=ctx.ref.session_id,
            wake_id=ctx.ref.wake_id,
            max_event_id=max_event_id,
            as_of=ctx.now,
            recent_limit=self.recent_limit,
            recent_page=self.recent_page,
        )
        snapshot = snapshot.model_copy(update={"blocks": self._intern(snapshot.blocks)})
        if call_index == 0 and self.adaptive_ttl:
            # As the agent workflow does: the idle gap before the wake, then pacing's TTLs,
            # and whether the wake's first call writes the session's cache entries.
            self.clock = self.clock.with_gap(at(ctx.turn.at))
            plan = wake_cache(self.clock, self.rates, at(ctx.turn.at))
            self._policy = self.policy.with_ttls(plan.first.stable, plan.first.session)
            self._wake_policy = self.policy.with_ttls(plan.ttls.stable, plan.ttls.session)
            self.writes.append(plan.write)
        elif call_index == 1 and self.adaptive_ttl:
            self._policy = self._wake_policy
        policy = self._policy
        if call_index == 0 and self.scripted:
            snapshot = snapshot.model_copy(
                update={"blocks": snapshot.blocks + self._retrieved(ctx)}
            )
        elif call_index == 0:
            snapshot, _ = retrieve_into(
                self._event_index(),
                sub,  # type: ignore[arg-type]
                snapshot,
                goal_text=goal_of(ctx.wake).text,
                policy=policy,
                max_event_id=max_event_id,
                max_tokens=RETRIEVAL_MAX_TOKENS,
            )
        window = compile_window(
            snapshot,
            goal_of(ctx.wake),
            policy,
            ctx.now,
            counter=self.counter,
            cache=self.cache,
            renderer=self.renderer,
        )
        if window.evidence_text:
            sub.record(_stored(evidence_event(ctx.ref, call_index, window, ctx.now), slot))
        self.windows.append(window)
        return Plan(window.request)

    def session_of(self, wake: Wake) -> int:
        """The session ``wake`` runs in (``timeline``'s ``session_of``). A wake the shape
        puts in a new session came after a gap past the idle limit; the session goes on
        when pacing prices continuing it cheaper than a handoff, as the agent workflow
        decides it: when the idle timer fires, then when the wake starts."""
        previous = self._last_wake
        if previous is None:
            self.session_number = 1
        elif wake.session != self._shape_session and not self._continues(previous, wake):
            self.session_number += 1
        self._shape_session, self._last_wake = wake.session, wake
        return self.session_number

    def _continues(self, previous: Wake, wake: Wake) -> bool:
        if not self.continue_past_idle or self.clock.last_used_at is None:
            return False
        policy = PacingPolicy(
            max_idle=timedelta(seconds=SESSION_IDLE_S),
            idle_ends_session=False,
            expected_calls=len(previous.turns),  # the workflow's: the last wake's calls
        )
        timer = previous.ended_at + SESSION_IDLE_S
        for when in (timer, wake.at) if timer < wake.at else (wake.at,):
            decision = decide(
                PacingInput(
                    now=at(when),
                    clock=self.clock,
                    rates=self.rates,
                    policy=policy,
                    provider="anthropic",
                    model=str(self.spec["model"]),
                    price_next_session=True,
                )
            )
            self.idle_reasons.append(f"wake {wake.number}: {decision.reason}")
            if decision.choice == "handoff":
                return False
        self.continued_past_idle.append(wake.number)
        return True

    def details(self) -> dict[str, Any]:
        """How many wakes' first calls wrote no session cache entry (pacing's
        ``first_call_write``), of the wakes priced; Wakeful's sessions, and the wakes that
        continued one past the idle limit."""
        sessions = {
            "sessions": self.session_number,
            "continued_past_idle_at_wakes": list(self.continued_past_idle),
        }
        if not self.adaptive_ttl:
            return sessions
        return {
            "first_calls_without_session_writes": sum(not w.write for w in self.writes),
            "wakes": len(self.writes),
            **sessions,
        }

    def history_full(self) -> bool:
        """Whether the latest window's history reached ``budget.consolidate_at``: the
        compile activity's ``CompileOut.consolidate``, on which the agent workflow starts a
        consolidation round once the wake ends."""
        recent = self.windows[-1].tokens_by_bucket.get("recent", 0) if self.windows else 0
        return self.policy.budget.consolidates(recent)

    def observe(self, ctx: CallContext, usage: Usage) -> None:
        """Keep the cache clock as the agent workflow keeps it (``update_clock``)."""
        window = self.windows[-1]
        self.last_reply = ctx.turn.text
        limit = self._policy.retrieval.max_tokens
        compiled = CompileOut(  # what the compile activity returns (compile_out)
            window_hash=window.window_hash,
            stable_prefix_hash=window.stable_prefix_hash,
            input_tokens=window.input_tokens,
            max_event_id=0,
            breakpoints=breakpoint_refs(window.ledger),
            fresh_tokens=window.ledger.fresh_session_tokens(limit),
            fresh_evidence_tokens=window.ledger.fresh_session_evidence(limit),
        )
        reply = CallModelOut(
            output_hash="",
            stop_reason="",
            input_tokens=usage.input_tokens,
            cache_creation_input_tokens=usage.cache_creation_input_tokens,
            cache_read_input_tokens=usage.cache_read_input_tokens,
        )
        model = str(self.spec["model"])
        self.clock = update_clock(self.clock, "anthropic", model, compiled, reply, ctx.now)

    def _event_index(self) -> EventIndex:
        if self._index is None:
            self._index_dir = tempfile.mkdtemp(prefix="wakeful-bench-index-")
            self._index = EventIndex(
                EdgeVectorStore(self._index_dir), HashingEmbedder(), count_tokens=self.count
            )
        return self._index

    def count(self, text: str) -> int:
        return self.counter.count(text)

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None
        if self._index_dir is not None:
            shutil.rmtree(self._index_dir, ignore_errors=True)
            self._index_dir = None

    def _intern(self, blocks: tuple[Block, ...]) -> tuple[Block, ...]:
        """Reuse the Block object of an unchanged block, so the compiler's facts cache hits.

        The snapshot code builds new objects on every call, as the worker does; ids are
        stable and a row's text never changes (only ``resolved`` may), so (id, resolved,
        text) identifies a block's content. The cache only saves work: output is the same.
        """
        out = []
        for block in blocks:
            key = (block.id, block.resolved, block.text)
            out.append(self._interned.setdefault(key, block))
        return tuple(out)

    @staticmethod
    def _retrieved(ctx: CallContext) -> tuple[Block, ...]:
        events = ctx.substrate.events(AGENT, wake_id=ctx.ref.wake_id)
        ask = next(e for e in events if e.kind == "turn")
        return tuple(
            Block(
                id=f"retrieved:{d.id}",
                kind=BlockKind.RETRIEVED,
                text=d.text,
                source=f"chunk:{d.id}",
                seq=ask.id,
                relevance=d.relevance,
            )
            for d in ctx.docs.get(ctx.ref.wake_id, ())
        )


def _stored(item: EventIn, event_id: int) -> StoredEvent:
    return StoredEvent(
        **item.model_dump(), id=event_id, content_hash=f"ev{event_id}", ingest_time=item.event_time
    )
