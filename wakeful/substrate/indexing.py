"""Events into the vector store, and retrieval candidates for a compile.

**Indexing is lazy.** Before the compile activity retrieves for an agent,
:meth:`EventIndex.catch_up` embeds and upserts every event past the agent's cursor (the
``index_cursors`` table, one cursor per agent and index) up to the compile's event horizon.
Each vector store names the index it holds (``VectorStore.identity``): workers with a
Qdrant Edge shard each keep a full replica through cursors of their own, and workers on one
Qdrant server share its collection and one cursor. Indexing there rather than where
events are appended is deliberate:

* every writer is covered - wake activities, tool results, ``wakeful import``, webhook
  ingress, consolidation - without any of them knowing about vectors;
* only the process that compiles (the worker) opens the vector store. CLI commands that
  append events never open a Qdrant Edge shard, which belongs to one process at a time;
* it is idempotent: a chunk's id is its event's id and a point's id derives from tenant and
  chunk id, so a retried or concurrent catch-up rewrites the same points. The cursor moves
  after each batch, so a long catch-up cut short by a timeout resumes where it stopped.

**Documents are indexed the same way.** An agent's document chunks (``wakeful docs add``,
``Agent(documents=...)``; rows of ``document_chunks``) are embedded into the same collection
past a cursor of their own (``docs|`` and the index key), as ``doc:<id>`` chunks of kind
``doc``, and compete with events in the same rankings under the same cap. Postgres stays
the truth: a hit on a chunk that a changed or removed file superseded is dropped at
retrieval, so an old version is never brought back whatever the vector store still holds;
and each catch-up deletes the points of chunks superseded since the last (counted past a
second cursor, ``docs-gone|``), so old versions do not take places in the rankings.

**Retrieval is a compiler input.** :meth:`EventIndex.gather` returns the hits for a query
(the goal, and the latest user turn) under a token cap, minus events the snapshot already
holds as raw turns (by event id and by content hash) and minus events past the compile's
horizon. :func:`retrieved_blocks` turns them into ``RETRIEVED`` blocks; the compiler decides
which enter the window. The hits are stored with the compile record (:func:`dump_hits`), so
a replay rebuilds the same blocks without asking the vector store again.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache

from pydantic import BaseModel, ConfigDict

from wakeful.compiler.blocks import Block, BlockKind, Snapshot, content_hash
from wakeful.compiler.evidence import EVIDENCE_META, spent
from wakeful.compiler.policy import WindowPolicy
from wakeful.errors import UserError
from wakeful.substrate.documents_repo import StoredDocChunk
from wakeful.substrate.embedders import Embedder
from wakeful.substrate.lexical import Bm25Encoder
from wakeful.substrate.records import EXPIRED_BY, DecisionRecord, StoredEvent
from wakeful.substrate.retrieval import RetrievalConfig, RetrievalHit, Retriever
from wakeful.substrate.store import TenantStore
from wakeful.substrate.vectors.base import CollectionSpec, FusionMode, VectorPoint, VectorStore
from wakeful.users import visible_to

__all__ = [
    "DOC_KIND",
    "INDEXED_KINDS",
    "EventIndex",
    "RetrievalRecord",
    "chunk_id",
    "doc_chunk_id_of",
    "doc_point",
    "doc_source",
    "dump_hits",
    "event_id_of",
    "event_point",
    "load_hits",
    "retrieval_cap",
    "retrieval_query",
    "retrieve",
    "retrieve_into",
    "retrieved_blocks",
    "with_hits",
]

TokenCounter = Callable[[str], int]
log = logging.getLogger(__name__)

# Tool calls are the model's own JSON arguments: their results and the turns around them
# carry what is worth finding again.
INDEXED_KINDS: tuple[str, ...] = ("turn", "tool_result")
_EVENT_BLOCKS = frozenset({BlockKind.TURN, BlockKind.TOOL_CALL, BlockKind.TOOL_RESULT})
_NOTE_KINDS = frozenset({BlockKind.HANDOFF_NOTE, BlockKind.SUMMARY})
# How many of an agent's newest events up to its cursor are searched for an indexable one
# whose point the store must hold (see EventIndex._holds_upto).
_HOLDS_PROBE = 32


def chunk_id(event_id: int) -> str:
    """The chunk id of an event: stable, and the same in every process."""
    return f"ev:{event_id}"


def event_id_of(chunk: str) -> int | None:
    """The event id of a chunk this module wrote; None for chunks from elsewhere."""
    head, _, tail = chunk.partition(":")
    return int(tail) if head == "ev" and tail.isdigit() else None


# The kind of a document chunk's point, and the prefix of its chunk id.
DOC_KIND = "doc"


def doc_chunk_id_of(chunk: str) -> int | None:
    """The ``document_chunks`` row id of a document chunk; None for any other chunk."""
    head, _, tail = chunk.partition(":")
    return int(tail) if head == DOC_KIND and tail.isdigit() else None


def doc_source(path: str, heading: str) -> str:
    """Where a retrieved document chunk comes from: ``doc:<path>#<heading>`` (no ``#``
    for text before a file's first heading)."""
    return f"doc:{path}#{heading}" if heading else f"doc:{path}"


def doc_point(
    tenant: str, agent: str, chunk: StoredDocChunk, vector: Sequence[float], embedder: str
) -> VectorPoint:
    """The point of one document chunk: sessionless (no neighbours), its source in
    ``external_id`` (the block's source when retrieved), its date the day it was added."""
    return VectorPoint(
        tenant=tenant,
        agent=agent,
        chunk_id=f"{DOC_KIND}:{chunk.id}",
        text=chunk.text,
        vector=tuple(vector),
        embedder=embedder,
        seq=chunk.id,
        session_id=None,
        session_date=None,
        external_id=doc_source(chunk.path, chunk.heading),
        kind=DOC_KIND,
        source_hash=chunk.content_hash,
    )


def event_point(
    tenant: str,
    agent: str,
    event: StoredEvent,
    position: int,
    vector: Sequence[float],
    embedder: str,
    *,
    max_chars: int,
) -> VectorPoint:
    """The chunk of one event. ``seq`` is its position in its session, so the turns before
    and after it are its neighbours; sessionless events have no neighbours.

    A text longer than ``max_chars`` is cut there (marked with "…"): the full event stays in
    the log, and one chunk must fit a window's evidence share to be of any use.
    """
    text = event.text if len(event.text) <= max_chars else event.text[: max_chars - 1] + "…"
    return VectorPoint(
        tenant=tenant,
        agent=agent,
        chunk_id=chunk_id(event.id),
        text=text,
        vector=tuple(vector),
        embedder=embedder,
        seq=position if event.session_id is not None else event.id,
        session_id=event.session_id,
        session_date=event.event_time,
        external_id=event.external_id,
        kind=event.kind,
        source_hash=event.content_hash,
    )


class EventIndex:
    """One vector collection of every agent's events, kept up to date lazily.

    Calls are serialised by a lock: activity threads share one store, and an embedded shard
    is not meant for concurrent writers.
    """

    def __init__(
        self,
        vectors: VectorStore,
        embedder: Embedder,
        *,
        config: RetrievalConfig | None = None,
        collection: str = "events",
        encoder: Bm25Encoder | None = None,
        count_tokens: TokenCounter | None = None,
        batch: int = 1000,
        max_chars: int = 4000,
    ) -> None:
        encoder = encoder or Bm25Encoder()
        self.vectors = vectors
        self.embedder = embedder
        # The collection's name carries a digest of the embedder's and the analyzer's names,
        # so their vectors never share one. On a Qdrant server each keeps its own (workers
        # of two versions may share the server during an upgrade, and must not drop each
        # other's); an Edge shard holds one collection and is rebuilt for another (below).
        names = f"{embedder.name}|{encoder.name}".encode()
        digest = hashlib.blake2b(names, digest_size=4).hexdigest()
        self.spec = CollectionSpec(
            name=f"{collection}-{digest}",
            embedder=embedder.name,
            dim=embedder.dim,
            sparse_encoder=encoder.name,
        )
        self.retriever = Retriever(vectors, embedder, config)
        # Sparse, dense or hybrid: explicit in ``config``, else chosen by the embedder (BM25
        # alone for a lexical one). Stored with every retrieval record.
        self.mode: FusionMode = self.retriever.mode
        # Hit texts recur from compile to compile: count each once (bounded memo).
        self._count = lru_cache(maxsize=65_536)(count_tokens) if count_tokens else None
        self._batch = batch
        self._max_chars = max_chars
        self._lock = threading.Lock()
        # (tenant, agent) -> highest event id known indexed, so a compile with nothing new
        # to index asks neither Postgres nor the vector store.
        self._cursors: dict[tuple[str, str], int] = {}
        # (docs-gone key, tenant, agent) -> superseded chunks this process has swept.
        self._swept: dict[tuple[str, str, str], int] = {}
        # The index is derived from the event log: a shard built by another embedder or
        # analyzer (or in an older storage format) is dropped and rebuilt, never mixed in.
        vectors.ensure_collection(self.spec, replace=True)
        # The cursor names everything that decides a chunk's bytes (another embedder or
        # analyzer is another index, indexed from the start) and which index it is. Workers
        # with a shard each keep a cursor each, so every shard is a full replica of the
        # log, caught up before each retrieval; workers on one Qdrant server share one. A
        # cursor shared by two shards would leave each with only what it happened to index.
        self._names = f"{collection}|{embedder.name}|{encoder.name}|{max_chars}"
        self.key = f"{self._names}|{vectors.identity}"

    def catch_up(self, ts: TenantStore, agent: str, *, upto: int) -> int:
        """Index ``agent``'s events up to event id ``upto``; returns how many were indexed."""
        with self._lock:
            return self._catch_up(ts, agent, upto) + self._catch_up_docs(ts, agent)

    def _catch_up(self, ts: TenantStore, agent: str, upto: int) -> int:
        known = self._cursors.get((ts.name, agent))
        if known is not None and known >= upto:
            return 0  # cursors only move forward: nothing to read
        cursor = ts.index_cursor(agent, self.key)
        if cursor and (known is None or cursor > known) and not self._holds_upto(ts, agent, cursor):
            # The store lacks points its cursor says it holds: a copy of another worker's
            # shard, which shares the original's cursor and would hold only what it happened
            # to index, or vectors lost behind the cursor. Another identity, another cursor:
            # every agent is caught up into it from the start (upserts are idempotent).
            log.warning(
                "the vector index %s lacks events its cursor says it holds (a copied shard?): "
                "indexing it again from the event log under a new identity",
                self.key,
            )
            self.key = f"{self._names}|{self.vectors.renew_identity()}"
            self._cursors.clear()
            cursor = ts.index_cursor(agent, self.key)
        done = 0
        while cursor < upto:
            rows = ts.events_with_positions(agent, after_id=cursor, upto_id=upto, limit=self._batch)
            if not rows:
                break
            wanted = [(e, pos) for e, pos in rows if e.kind in INDEXED_KINDS and e.text.strip()]
            vectors = self.embedder.embed([e.text[: self._max_chars] for e, _ in wanted])
            points = [
                event_point(
                    ts.name, agent, e, pos, vec, self.embedder.name, max_chars=self._max_chars
                )
                for (e, pos), vec in zip(wanted, vectors, strict=True)
            ]
            self.vectors.upsert(points)
            cursor = rows[-1][0].id
            ts.set_index_cursor(agent, self.key, cursor)
            done += len(points)
        # Nothing lies between the cursor and ``upto`` now (or ever will: ids only grow).
        self._cursors[(ts.name, agent)] = max(cursor, upto)
        return done

    def _catch_up_docs(self, ts: TenantStore, agent: str) -> int:
        """Index ``agent``'s document chunks past its document cursor in this index, and
        drop the points of those superseded since (``_sweep_docs``); returns how many were
        indexed. Every chunk row is indexed, superseded or not, so that what an index holds
        after a catch-up follows from the rows alone, not from when it caught up."""
        key = f"docs|{self.key}"
        cursor = ts.index_cursor(agent, key)
        done = 0
        while True:
            newest = ts.max_doc_chunk_id(agent)
            if newest <= cursor:
                if cursor:  # an agent that never had a document has nothing to sweep
                    self._sweep_docs(ts, agent, cursor)
                return done
            rows = ts.doc_chunks(agent, after_id=cursor, limit=self._batch, live_only=False)
            wanted = [r for r in rows if r.text.strip()]
            vectors = self.embedder.embed([r.text[: self._max_chars] for r in wanted])
            points = [
                doc_point(ts.name, agent, r, vec, self.embedder.name)
                for r, vec in zip(wanted, vectors, strict=True)
            ]
            if points:
                self.vectors.upsert(points)
            cursor = rows[-1].id if rows else newest
            ts.set_index_cursor(agent, key, cursor)
            done += len(points)

    def _sweep_docs(self, ts: TenantStore, agent: str, cursor: int) -> None:
        """Delete the points of ``agent``'s superseded chunks up to ``cursor``. Retrieval
        drops them anyway, but left in the index they would take places in each ranking,
        and a section edited often would crowd out its own live chunk and other files'.
        Superseded rows only ever grow in number: their count, kept beside the cursor, says
        when there is something to delete (deleting a point twice is a no-op)."""
        key = f"docs-gone|{self.key}"
        gone = ts.superseded_doc_chunk_count(agent, upto_id=cursor)
        seen = (key, ts.name, agent)
        if self._swept.get(seen) == gone:  # this process swept that far: no cursor read
            return
        if gone != ts.index_cursor(agent, key):
            ids = ts.superseded_doc_chunks(agent, upto_id=cursor)
            self.vectors.delete(ts.name, agent, [f"{DOC_KIND}:{i}" for i in ids])
            ts.set_index_cursor(agent, key, len(ids))
        self._swept[seen] = gone

    def _holds_upto(self, ts: TenantStore, agent: str, cursor: int) -> bool:
        """Whether the store holds the newest indexable event at or before ``cursor``
        (checked when this process first meets the cursor, or finds it moved by another:
        on a Qdrant server that is a worker sharing the collection, which wrote the point
        before it moved the cursor)."""
        recent = ts.recent_events(agent, max_id=cursor, limit=_HOLDS_PROBE)
        for e in reversed(recent):
            if e.kind in INDEXED_KINDS and e.text.strip():
                return self.vectors.holds(ts.name, chunk_id(e.id))
        return True  # nothing indexable among the newest: nothing to check against

    def gather(
        self,
        ts: TenantStore,
        agent: str,
        *,
        query: str,
        max_event_id: int,
        token_cap: int,
        present: Iterable[Block] = (),
        count_tokens: TokenCounter | None = None,
        min_score: float = 0.0,
        user: str | None = None,
    ) -> list[RetrievalHit]:
        """Catch up, then retrieve under ``token_cap``: the compile's retrieval candidates.

        Only events a wake for ``user`` may read are kept (``wakeful.users``: agent-wide
        ones, and that user's; with None, agent-wide ones only): the index holds every
        event of the agent, and Postgres says whose each one is.

        Events already among ``present`` (the snapshot's raw turns and tool traffic, and
        what its recorded evidence holds) are left out by event id and by content hash, and
        so are events past ``max_event_id``, turns the handoff note or a summary quotes, and
        events a summary among ``present`` replaced (its span: consolidation retired them,
        and the window would hold the summary and what it stands for).
        A candidate scoring below ``min_score`` times the best match is not packed (the
        turns around a packed hit still may be). Hit texts are measured with
        ``count_tokens`` (default: the index's own counter).
        """
        count = count_tokens or self._count
        if count is None:
            raise UserError("EventIndex.gather needs count_tokens, or an index built with one")
        if not query.strip() or token_cap <= 0:
            return []
        present = list(present)
        skip_ids, skip_hashes = _present(present)
        held = _held_texts(present)
        replaced = _summary_spans(present)
        live_docs: set[int] = set()
        hidden: set[int] = set()  # events of another scope than the wake's
        checked: set[int] = set()

        def check_scope(chunks: Iterable[str]) -> None:
            ids = {i for c in chunks if (i := event_id_of(c)) is not None} - checked
            if ids:
                checked.update(ids)
                hidden.update(
                    e.id
                    for e in ts.events_by_ids(agent, sorted(ids))
                    if not visible_to(e.user_id, user)
                )

        with self._lock:
            self._catch_up(ts, agent, max_event_id)
            self._catch_up_docs(ts, agent)

            def keep(hit_chunk: str, source_hash: str, text: str) -> bool:
                doc = doc_chunk_id_of(hit_chunk)
                if doc is not None and doc not in live_docs:
                    return False  # superseded by a newer version, or removed
                event = event_id_of(hit_chunk)
                if event is not None and (
                    event in skip_ids
                    or event in hidden
                    or event > max_event_id
                    or any(lo <= event <= hi for lo, hi in replaced)
                ):
                    return False
                if source_hash in skip_hashes:
                    return False
                quoted = text.strip()
                return not quoted or not any(quoted in t for t in held)

            found = self.retriever.candidates(
                query, tenant=ts.name, agent=agent, token_cap=token_cap
            )
            # Postgres decides which document chunks still hold: one read for the hits.
            docs = {d for c in found if (d := doc_chunk_id_of(c.hit.chunk_id)) is not None}
            live_docs = ts.live_doc_chunks(agent, docs) if docs else set()
            check_scope(c.hit.chunk_id for c in found)
            floor = min_score * max((c.score for c in found), default=0.0)
            kept = [
                c
                for c in found
                if c.score >= floor and keep(c.hit.chunk_id, c.hit.source_hash, c.hit.text)
            ]
            packed = self.retriever.pack(
                kept,
                tenant=ts.name,
                agent=agent,
                token_cap=token_cap,
                count_tokens=count,
            )
        # Neighbours are read back after the filter above: filter them too.
        check_scope(h.chunk_id for h in packed)
        kept_hits = [h for h in packed if keep(h.chunk_id, h.source_hash, h.text)]
        return _mark_ended(kept_hits, ts.all_decisions(agent), count) if kept_hits else []

    def close(self) -> None:
        self.vectors.close()


def _mark_ended(
    hits: list[RetrievalHit], decisions: Sequence[DecisionRecord], count: TokenCounter
) -> list[RetrievalHit]:
    """The hits, each that states a decision which no longer holds marked with what holds
    now: a retrieved turn saying "Use Postgres 17" while the registry holds 18 would
    otherwise read as current. A hit states a decision when it is the decision's source
    event, names its id ("Recorded DEC-12 ..."), or contains its text. The mark goes first,
    so a reader meets it before the old words; the hit's tokens are counted again."""
    by_id = {d.decision_id: d for d in decisions}
    ended = [
        d
        for d in decisions
        if d.proposal_for is None and (d.superseded_by is not None or d.retired_by is not None)
    ]
    if not ended:
        return hits
    out = []
    for h in hits:
        event = event_id_of(h.chunk_id)
        said = _folded(h.text)
        marks = [
            _ended_note(d, by_id)
            for d in ended
            if (event is not None and d.source_event == event)
            or re.search(rf"(?<![\w-]){re.escape(d.decision_id)}(?![\w-])", h.text)
            or _states(said, d.text)
        ]
        if marks:
            text = "\n".join(marks) + "\n" + h.text
            h = h.model_copy(update={"text": text, "tokens": count(text)})
        out.append(h)
    return out


def _folded(text: str) -> str:
    return " ".join(text.lower().split())


# Shorter decision texts ("Yes.") would be found in unrelated turns.
_MIN_STATED = 12


def _states(folded_hit: str, decision_text: str) -> bool:
    core = _folded(decision_text).rstrip(".!;: ")
    return len(core) >= _MIN_STATED and core in folded_hit


def _ended_note(d: DecisionRecord, by_id: Mapping[str, DecisionRecord]) -> str:
    """``[decision DEC-3 (db.engine) no longer holds: superseded; now P-5: Use Postgres
    18.]``, following the successors to the one that holds now."""
    name = f"{d.decision_id}" + (f" ({d.key})" if d.key else "")
    head = f"[decision {name} no longer holds: "
    now, seen = d, {d.decision_id}
    while now.superseded_by is not None and now.superseded_by in by_id:
        now = by_id[now.superseded_by]
        if now.decision_id in seen:  # a cycle would be a corrupt registry: stop at it
            break
        seen.add(now.decision_id)
    if now is d:
        if d.superseded_by is not None:
            return head + f"superseded by {d.superseded_by}]"
        expired = d.retired_by is not None and d.retired_by.startswith(EXPIRED_BY)
        return head + ("expired]" if expired else "retired]")
    if now.superseded_by is None and now.retired_by is None:
        return head + f"superseded; now {now.decision_id}: {now.text}]"
    return head + f"superseded by {d.superseded_by}, since ended too]"


def _present(blocks: Iterable[Block]) -> tuple[set[int], set[str]]:
    """Event ids and content hashes of what the window holds already: raw events, and the
    events a wake's recorded evidence brought (listed in its meta)."""
    ids: set[int] = set()
    hashes: set[str] = set()
    for b in blocks:
        if b.kind not in _EVENT_BLOCKS or not b.source.startswith("events:"):
            continue
        ident = b.source.removeprefix("events:")
        if ident.isdigit():
            ids.add(int(ident))
        # The event log's content hash (see TenantStore.append_events).
        role = b.role.value if b.role else ""
        hashes.add(content_hash(b.text, b.kind.value, role, b.tool_call_id or ""))
        for held in b.meta.get(EVIDENCE_META, "").split():
            event = event_id_of(held.removeprefix("retrieved:"))
            if event is not None:
                ids.add(event)
    return ids, hashes


def _summary_spans(blocks: Iterable[Block]) -> list[tuple[int, int]]:
    """The event-id spans the summaries among ``blocks`` replaced (``meta["span"]``, as
    ``substrate.snapshot`` writes it): consolidation retired the events in each span."""
    spans: list[tuple[int, int]] = []
    for b in blocks:
        if b.kind is not BlockKind.SUMMARY:
            continue
        lo, sep, hi = b.meta.get("span", "").partition("-")
        if sep and lo.isdigit() and hi.isdigit():
            spans.append((int(lo), int(hi)))
    return spans


def _held_texts(blocks: Iterable[Block]) -> tuple[str, ...]:
    """Texts that already carry old turns into the window: the handoff note and summaries.
    A hit whose text one of them quotes would say it twice."""
    return tuple(b.text for b in blocks if b.kind in _NOTE_KINDS and b.text)


def retrieval_query(goal_text: str, blocks: Iterable[Block]) -> str:
    """The goal, and the latest user turn when it says something else."""
    latest = None
    for b in blocks:
        if b.kind is BlockKind.TURN and b.role is not None and b.role.value == "user":
            if latest is None or (b.seq, b.id) > (latest.seq, latest.id):
                latest = b
    parts = [goal_text.strip()]
    if latest is not None and latest.text.strip() and latest.text.strip() != parts[0]:
        parts.append(latest.text.strip())
    return "\n".join(p for p in parts if p)


def retrieval_cap(policy: WindowPolicy, max_tokens: int) -> int:
    """Tokens of candidates to gather: the policy's ``retrieval.max_tokens`` (what one wake
    may bring), within what evidence could ever take in its window (its own share plus what
    summaries and recent turns might leave), at most ``max_tokens``. The compiler takes what
    fits; the rest is out-ranked in the ledger."""
    shares = policy.budget.allocations
    room = policy.budget.input_budget * (shares.evidence + shares.summaries + shares.recent)
    return max(0, min(max_tokens, policy.retrieval.max_tokens, int(room)))


def retrieved_blocks(hits: Sequence[RetrievalHit]) -> list[Block]:
    """``RETRIEVED`` blocks whose relevance follows the packing order.

    The retriever packs best-first, each hit's neighbours placed where they earn their
    tokens (a reply right after the question it answers, other turns around a hit a few
    hits later). Relevance falls linearly along that order (1 for the first, 1/n for the
    last), so a compiler that cannot take every hit keeps the retriever's order rather than
    re-sorting neighbours by their own scores.
    """
    n = len(hits)
    return [_block_of(h).model_copy(update={"relevance": (n - i) / n}) for i, h in enumerate(hits)]


def _block_of(hit: RetrievalHit) -> Block:
    """A hit's block; a document chunk's source is ``doc:<path>#<heading>``."""
    block = hit.to_block()
    if hit.kind == DOC_KIND and hit.external_id:
        return block.model_copy(update={"source": hit.external_id})
    return block


class RetrievalRecord(BaseModel):
    """What a compile retrieved: stored as a blob, referenced by the compile record."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = 1
    query: str
    token_cap: int
    hits: tuple[RetrievalHit, ...]
    mode: FusionMode | None = None  # rankings that found the hits; None in older records


def dump_hits(
    query: str, token_cap: int, hits: Sequence[RetrievalHit], mode: FusionMode | None = None
) -> str:
    """The blob a compile record points at (fields in declaration order: deterministic)."""
    record = RetrievalRecord(query=query, token_cap=token_cap, hits=tuple(hits), mode=mode)
    return record.model_dump_json()


def load_hits(text: str) -> RetrievalRecord:
    return RetrievalRecord.model_validate_json(text)


def with_hits(snapshot: Snapshot, hits: Sequence[RetrievalHit]) -> Snapshot:
    """The snapshot with the hits appended as ``RETRIEVED`` blocks (same in a replay)."""
    if not hits:
        return snapshot
    return snapshot.model_copy(update={"blocks": snapshot.blocks + tuple(retrieved_blocks(hits))})


def retrieve_into(
    index: EventIndex,
    ts: TenantStore,
    snapshot: Snapshot,
    *,
    goal_text: str,
    policy: WindowPolicy,
    max_event_id: int,
    max_tokens: int,
    call_index: int = 0,
    user: str | None = None,
) -> tuple[Snapshot, str | None]:
    """Gather retrieval candidates for a compile and store them; returns the snapshot with
    the hits and the blob hash the compile record keeps for replays (None: no retrieval).
    See :func:`retrieve`; the compile activity asks it through its query source
    (``substrate.query_sources.EventRetrieval``)."""
    hits, digest = retrieve(
        index,
        ts,
        snapshot.agent.name,
        snapshot.blocks,
        goal_text=goal_text,
        policy=policy,
        max_event_id=max_event_id,
        max_tokens=max_tokens,
        call_index=call_index,
        user=user,
    )
    return with_hits(snapshot, hits), digest


def retrieve(
    index: EventIndex,
    ts: TenantStore,
    agent: str,
    present: Sequence[Block],
    *,
    goal_text: str,
    policy: WindowPolicy,
    max_event_id: int,
    max_tokens: int,
    call_index: int = 0,
    user: str | None = None,
) -> tuple[list[RetrievalHit], str | None]:
    """The retrieval hits for a compile whose snapshot holds ``present``, stored; returns
    them and the blob hash the compile record keeps for replays (None: no retrieval).
    Hits are events a wake for ``user`` may read (``wakeful.users``).

    Only a wake's first call retrieves. What it brings is recorded with the wake (an
    ``evidence`` event, see ``compiler.place``), so the wake's later calls send it again
    from there, in the same place, and retrieving again would only rewrite what follows
    it; the question of a wake does not change. Hits are what is relevant enough
    (``retrieval.min_score``) up to ``retrieval.max_tokens``, never what the window holds
    already (raw turns, the earlier wakes' recorded evidence it carries, the handoff
    note, summaries).
    """
    if call_index > 0:
        return [], None
    # An ended wake's evidence that the window will not carry holds nothing: what it held
    # may be brought again (``compiler.evidence.carried``).
    gone = spent(present, policy.retrieval.keep_for_calls)
    if gone:
        present = [b for b in present if b.id not in gone]
    query = retrieval_query(goal_text, present)
    cap = retrieval_cap(policy, max_tokens)
    hits = index.gather(
        ts,
        agent,
        query=query,
        max_event_id=max_event_id,
        token_cap=cap,
        present=present,
        min_score=policy.retrieval.min_score,
        user=user,
    )
    digest = ts.put_blob("retrieval", dump_hits(query, cap, hits, index.mode))
    return hits, digest
