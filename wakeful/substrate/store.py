"""The substrate's entry point: the engine, and each tenant's one-shot methods.

``Store`` owns the engine; ``Store.tenant(name)`` returns a :class:`TenantStore`, and every
read or write goes through one, so no public method can touch another tenant's rows.

The SQL lives in one repository per aggregate (agents, wakes and their ledger, events,
documents, index cursors, knowledge, the decision registry, consolidation, blobs, claims),
each constructed with a connection and the tenant and doing all its work on that connection.
:meth:`TenantStore.unit` opens one transaction and yields a
:class:`~wakeful.substrate.unit_of_work.UnitOfWork` whose attributes are those repositories,
bound to it: what a caller groups in ``with ts.unit() as uow:`` is one transaction on one
connection. Every repository method is also a method of :class:`TenantStore` of the same
name and signature, which runs it in a unit of its own. Writes that an activity makes are
idempotent on ``step_key``: a retry returns the first write.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Concatenate, ParamSpec, TypeVar

from sqlalchemy import Engine, create_engine
from sqlalchemy.exc import OperationalError

from wakeful.errors import StoreError
from wakeful.names import check_tenant
from wakeful.substrate import binary_arrays
from wakeful.substrate.agents_repo import AgentsRepo
from wakeful.substrate.blobs import BlobsRepo
from wakeful.substrate.claims import ClaimsRepo
from wakeful.substrate.consolidation_repo import ConsolidationRepo
from wakeful.substrate.cooldowns_repo import CooldownsRepo
from wakeful.substrate.documents_repo import DocumentsRepo
from wakeful.substrate.events_repo import EventsRepo
from wakeful.substrate.index_cursors_repo import IndexCursorsRepo
from wakeful.substrate.knowledge import KnowledgeRepo
from wakeful.substrate.liveness import ping_when_idle
from wakeful.substrate.migrate import migrate
from wakeful.substrate.pg_safe import install as install_pg_safe
from wakeful.substrate.registry_repo import RegistryRepo
from wakeful.substrate.stream_repo import StreamRepo
from wakeful.substrate.unit_of_work import UnitOfWork
from wakeful.substrate.wakes_repo import WakesRepo

__all__ = ["Store", "TenantStore", "UnitOfWork"]

_P = ParamSpec("_P")
_R = TypeVar("_R")
_T = TypeVar("_T")


class Store:
    """The substrate's rows in Postgres."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        # Text Postgres would refuse (NUL, lone surrogates) is cleaned on the way in, for
        # every statement: a bad byte from the world must never fail a write forever.
        install_pg_safe(engine)
        # Lists (batched events, blob rows) as binary arrays: nothing in them to escape.
        binary_arrays.install(engine)

    @classmethod
    def connect(cls, url: str, *, migrate_schema: bool = True) -> Store:
        # hide_parameters: event text must never ride along in an error into workflow history.
        engine = create_engine(url, pool_size=5, max_overflow=5, hide_parameters=True)
        ping_when_idle(engine)  # not a ping per transaction (see liveness)
        store = cls(engine)
        if migrate_schema:
            try:
                migrate(engine)
            except OperationalError as exc:
                raise StoreError(
                    f"cannot reach Postgres at {engine.url.render_as_string(hide_password=True)}:"
                    f" {exc.orig}. Start it (`wakeful stack up`) or fix WAKEFUL_DATABASE_URL."
                ) from exc
        return store

    def tenant(self, tenant: str) -> TenantStore:
        """The repository scoped to ``tenant`` (a valid name: :mod:`wakeful.names`)."""
        return TenantStore(self.engine, check_tenant(tenant))

    def close(self) -> None:
        self.engine.dispose()


def _one_shot(
    repo: Callable[[UnitOfWork], _R], method: Callable[Concatenate[_R, _P], _T]
) -> Callable[Concatenate[TenantStore, _P], _T]:
    """``method`` of the repository ``repo`` picks from a unit, as a method of
    :class:`TenantStore` with its signature: it runs in the store's :meth:`~TenantStore.unit`."""

    @functools.wraps(method)
    def run(self: TenantStore, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        with self.unit() as uow:
            return method(repo(uow), *args, **kwargs)

    return run


class TenantStore:
    """One tenant's substrate: every repository method, each run in a unit of work.

    A store made by :meth:`Store.tenant` runs each call in a transaction of its own; one
    made by :meth:`within` runs each in the unit it was given, for code written against
    these methods (opening a wake, a snapshot's context sources) that a caller runs inside
    its own unit."""

    def __init__(self, engine: Engine, tenant: str, unit: UnitOfWork | None = None) -> None:
        self.engine = engine
        self.name = tenant
        self.bound = unit  # the unit every call runs in; None: a unit per call

    @contextmanager
    def unit(self) -> Iterator[UnitOfWork]:
        """One transaction (``engine.begin()``) and the repositories bound to its
        connection; committed when the block ends, rolled back when it raises. A store
        made by :meth:`within` yields the unit it was given (its caller commits)."""
        if self.bound is not None:
            yield self.bound
            return
        with self.engine.begin() as conn:
            yield UnitOfWork(conn, self.name)

    def within(self, uow: UnitOfWork) -> TenantStore:
        """This tenant's methods, each run in ``uow``: its transaction, its connection."""
        if uow.tenant != self.name:
            raise ValueError(f"a unit of tenant {uow.tenant!r} used for tenant {self.name!r}")
        return TenantStore(self.engine, self.name, uow)

    def standalone(self) -> TenantStore:
        """This tenant's methods, each in a transaction of its own (for another thread:
        a unit's connection runs one statement at a time)."""
        return self if self.bound is None else TenantStore(self.engine, self.name)

    # --- agents -----------------------------------------------------------------------
    upsert_agent = _one_shot(lambda u: u.agents, AgentsRepo.upsert_agent)
    get_agent = _one_shot(lambda u: u.agents, AgentsRepo.get_agent)
    list_agents = _one_shot(lambda u: u.agents, AgentsRepo.list_agents)

    # --- wakes, and their compiles and model calls ----------------------------------------
    start_wake = _one_shot(lambda u: u.wakes, WakesRepo.start_wake)
    finish_wake = _one_shot(lambda u: u.wakes, WakesRepo.finish_wake)
    finish_wake_keeping_its_stream = _one_shot(
        lambda u: u.wakes, WakesRepo.finish_wake_keeping_its_stream
    )
    publish_stream = _one_shot(lambda u: u.stream, StreamRepo.publish_stream)
    keep_latest_stream = _one_shot(lambda u: u.stream, StreamRepo.keep_latest_stream)
    stream_since = _one_shot(lambda u: u.stream, StreamRepo.stream_since)
    cooling_routes = _one_shot(lambda u: u.cooldowns, CooldownsRepo.cooling_routes)
    cool_down_route = _one_shot(lambda u: u.cooldowns, CooldownsRepo.cool_down_route)
    wakes = _one_shot(lambda u: u.wakes, WakesRepo.wakes)
    wake_by_key = _one_shot(lambda u: u.wakes, WakesRepo.wake_by_key)
    wake_by_number = _one_shot(lambda u: u.wakes, WakesRepo.wake_by_number)
    record_compile = _one_shot(lambda u: u.wakes, WakesRepo.record_compile)
    record_compile_with_blobs = _one_shot(lambda u: u.wakes, WakesRepo.record_compile_with_blobs)
    record_model_call = _one_shot(lambda u: u.wakes, WakesRepo.record_model_call)
    record_model_call_with_output = _one_shot(
        lambda u: u.wakes, WakesRepo.record_model_call_with_output
    )
    compiles = _one_shot(lambda u: u.wakes, WakesRepo.compiles)
    compile_alternates = _one_shot(lambda u: u.wakes, WakesRepo.compile_alternates)
    model_calls = _one_shot(lambda u: u.wakes, WakesRepo.model_calls)
    spend_since = _one_shot(lambda u: u.wakes, WakesRepo.spend_since)
    model_call_by_step = _one_shot(lambda u: u.wakes, WakesRepo.model_call_by_step)

    # --- events -----------------------------------------------------------------------
    append_events = _one_shot(lambda u: u.events, EventsRepo.append_events)
    events = _one_shot(lambda u: u.events, EventsRepo.events)
    event_by_step = _one_shot(lambda u: u.events, EventsRepo.event_by_step)
    recent_events = _one_shot(lambda u: u.events, EventsRepo.recent_events)
    max_event_id = _one_shot(lambda u: u.events, EventsRepo.max_event_id)
    count_events = _one_shot(lambda u: u.events, EventsRepo.count_events)
    events_with_positions = _one_shot(lambda u: u.events, EventsRepo.events_with_positions)
    session_count = _one_shot(lambda u: u.events, EventsRepo.session_count)
    session_events_after_counted = _one_shot(
        lambda u: u.events, EventsRepo.session_events_after_counted
    )
    last_retired_revision = _one_shot(lambda u: u.events, EventsRepo.last_retired_revision)
    tool_result_meta = _one_shot(lambda u: u.events, EventsRepo.tool_result_meta)
    holds_result = _one_shot(lambda u: u.events, EventsRepo.holds_result)

    # --- documents ----------------------------------------------------------------------
    add_documents = _one_shot(lambda u: u.documents, DocumentsRepo.add_documents)
    remove_document = _one_shot(lambda u: u.documents, DocumentsRepo.remove_document)
    documents = _one_shot(lambda u: u.documents, DocumentsRepo.documents)
    doc_chunks = _one_shot(lambda u: u.documents, DocumentsRepo.doc_chunks)
    max_doc_chunk_id = _one_shot(lambda u: u.documents, DocumentsRepo.max_doc_chunk_id)
    live_doc_chunks = _one_shot(lambda u: u.documents, DocumentsRepo.live_doc_chunks)
    superseded_doc_chunk_count = _one_shot(
        lambda u: u.documents, DocumentsRepo.superseded_doc_chunk_count
    )
    superseded_doc_chunks = _one_shot(lambda u: u.documents, DocumentsRepo.superseded_doc_chunks)

    # --- vector index cursors -----------------------------------------------------------
    index_cursor = _one_shot(lambda u: u.cursors, IndexCursorsRepo.index_cursor)
    set_index_cursor = _one_shot(lambda u: u.cursors, IndexCursorsRepo.set_index_cursor)
    reset_index_cursor = _one_shot(lambda u: u.cursors, IndexCursorsRepo.reset_index_cursor)

    # --- knowledge: handoff notes, decisions, memories, summaries -----------------------
    knowledge_revision = _one_shot(lambda u: u.knowledge, KnowledgeRepo.knowledge_revision)
    snapshot_horizon = _one_shot(lambda u: u.knowledge, KnowledgeRepo.snapshot_horizon)
    write_handoff = _one_shot(lambda u: u.knowledge, KnowledgeRepo.write_handoff)
    latest_handoff = _one_shot(lambda u: u.knowledge, KnowledgeRepo.latest_handoff)
    handoffs = _one_shot(lambda u: u.knowledge, KnowledgeRepo.handoffs)
    register_decision = _one_shot(lambda u: u.knowledge, KnowledgeRepo.register_decision)
    supersede_decision = _one_shot(lambda u: u.knowledge, KnowledgeRepo.supersede_decision)
    live_decisions = _one_shot(lambda u: u.knowledge, KnowledgeRepo.live_decisions)
    remember = _one_shot(lambda u: u.knowledge, KnowledgeRepo.remember)
    memories = _one_shot(lambda u: u.knowledge, KnowledgeRepo.memories)
    add_summary = _one_shot(lambda u: u.knowledge, KnowledgeRepo.add_summary)
    summaries = _one_shot(lambda u: u.knowledge, KnowledgeRepo.summaries)

    # --- the decision registry by key ---------------------------------------------------
    decision = _one_shot(lambda u: u.registry, RegistryRepo.decision)
    record_decision = _one_shot(lambda u: u.registry, RegistryRepo.record_decision)
    supersede_with = _one_shot(lambda u: u.registry, RegistryRepo.supersede_with)
    retire_decision = _one_shot(lambda u: u.registry, RegistryRepo.retire_decision)
    accept_proposal = _one_shot(lambda u: u.registry, RegistryRepo.accept_proposal)
    expire_decisions = _one_shot(lambda u: u.registry, RegistryRepo.expire_decisions)
    expire_then_horizon = _one_shot(lambda u: u.registry, RegistryRepo.expire_then_horizon)

    # --- consolidation ------------------------------------------------------------------
    events_by_ids = _one_shot(lambda u: u.consolidation, ConsolidationRepo.events_by_ids)
    session_bounds = _one_shot(lambda u: u.consolidation, ConsolidationRepo.session_bounds)
    summaries_by_ids = _one_shot(lambda u: u.consolidation, ConsolidationRepo.summaries_by_ids)
    all_decisions = _one_shot(lambda u: u.consolidation, ConsolidationRepo.all_decisions)
    memory_history = _one_shot(lambda u: u.consolidation, ConsolidationRepo.memory_history)
    recent_compiles = _one_shot(lambda u: u.consolidation, ConsolidationRepo.recent_compiles)
    commit_summary = _one_shot(lambda u: u.consolidation, ConsolidationRepo.commit_summary)
    mark_memories = _one_shot(lambda u: u.consolidation, ConsolidationRepo.mark_memories)
    retire_memories = _one_shot(lambda u: u.consolidation, ConsolidationRepo.retire_memories)
    log_consolidation = _one_shot(lambda u: u.consolidation, ConsolidationRepo.log_consolidation)
    logged = _one_shot(lambda u: u.consolidation, ConsolidationRepo.logged)
    consolidation_log = _one_shot(lambda u: u.consolidation, ConsolidationRepo.consolidation_log)

    # --- blobs and claims ---------------------------------------------------------------
    put_blob = _one_shot(lambda u: u.blobs, BlobsRepo.put_blob)
    put_blobs = _one_shot(lambda u: u.blobs, BlobsRepo.put_blobs)
    blob_rows = _one_shot(lambda u: u.blobs, BlobsRepo.blob_rows)
    get_blob = _one_shot(lambda u: u.blobs, BlobsRepo.get_blob)
    claim_delivery = _one_shot(lambda u: u.claims, ClaimsRepo.claim_delivery)
    claim_delivered = _one_shot(lambda u: u.claims, ClaimsRepo.claim_delivered)
    release_claim = _one_shot(lambda u: u.claims, ClaimsRepo.release_claim)
