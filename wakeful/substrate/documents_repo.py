"""An agent's documents in Postgres: chunk rows by path and version.

:class:`DocumentsRepo` works on one tenant's rows, on the connection it is given (a unit of
work's). Adding a file whose live version is the same does nothing; a changed one
supersedes the live chunks of its path that changed and adds the new ones (a chunk the
new version holds word for word keeps its row, and its point in the vector index), in one
transaction, under a lock on the path, so two concurrent adds of one file leave one live
version.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from sqlalchemy import bindparam, func, insert, select, text, update
from sqlalchemy.sql.elements import ColumnElement

from wakeful.compiler.blocks import content_hash
from wakeful.errors import UserError
from wakeful.substrate import schema as t
from wakeful.substrate.agents_repo import AgentsRepo
from wakeful.substrate.doc_chunks import DocumentFile
from wakeful.substrate.tenant_repo import TenantRepo

__all__ = ["DocumentChange", "DocumentInfo", "DocumentsRepo", "StoredDocChunk", "chunk_hash"]

Outcome = Literal["added", "replaced", "unchanged"]


def chunk_hash(path: str, text_: str) -> str:
    """A chunk's content hash: its text and path (the same words in two files are two
    chunks; in one file, once)."""
    return content_hash(text_, "doc", path)


@dataclass(frozen=True, slots=True)
class DocumentChange:
    """What adding one file did."""

    path: str
    version: str
    outcome: Outcome
    chunks: int  # live chunks of the path now
    superseded: int  # chunks of the older version this add superseded (those that changed)


@dataclass(frozen=True, slots=True)
class DocumentInfo:
    """One live document of an agent."""

    path: str
    version: str
    chunks: int
    added_at: datetime


@dataclass(frozen=True, slots=True)
class StoredDocChunk:
    id: int
    path: str
    version: str
    heading: str
    text: str
    content_hash: str
    created_at: datetime


class DocumentsRepo(TenantRepo):
    """One tenant's document chunks, on one connection."""

    def add_documents(self, agent: str, files: Sequence[DocumentFile]) -> list[DocumentChange]:
        """Store ``files`` as ``agent``'s documents (see the module's docstring)."""
        AgentsRepo(self.conn, self.tenant).get_agent(agent)  # an unknown agent: one line
        return [self._add(agent, f) for f in files]

    def _add(self, agent: str, doc: DocumentFile) -> DocumentChange:
        # One add of a path at a time (a hash collision only makes two adds wait in turn).
        self.conn.execute(
            text(
                "select pg_advisory_xact_lock(hashtextextended(concat_ws(' ', 'doc',"
                " cast(:tenant as text), cast(:agent as text), cast(:path as text)), 0))"
            ),
            {"tenant": self.tenant, "agent": agent, "path": doc.path},
        )
        live = self._live(agent, doc.path)
        version = doc.version
        if live and {r.version for r in live} == {version}:
            return DocumentChange(doc.path, version, "unchanged", len(live), 0)
        chunks = doc.chunks()
        if not chunks:
            raise UserError(f"{doc.path} has no text to add")
        # A chunk the live version holds word for word (its heading and text) keeps its row,
        # and with it its point in the vector index: only what changed is superseded and
        # added. Otherwise every edit would leave a dead copy of each unchanged chunk in the
        # index, and a file edited often would crowd its live chunks (and other files') out
        # of each ranking with copies that retrieval then drops.
        unmatched: dict[tuple[str, str], list[StoredDocChunk]] = {}
        for row in live:
            unmatched.setdefault((row.heading, row.content_hash), []).append(row)
        kept: list[dict[str, object]] = []
        fresh: list[dict[str, object]] = []
        for i, ch in enumerate(chunks):
            digest = chunk_hash(doc.path, ch.text)
            same = unmatched.get((ch.heading, digest))
            if same:
                kept.append({"row": same.pop(0).id, "place": i})
                continue
            fresh.append(
                {
                    "tenant": self.tenant,
                    "agent": agent,
                    "path": doc.path,
                    "version": version,
                    "ordinal": i,
                    "heading": ch.heading,
                    "text": ch.text,
                    "content_hash": digest,
                }
            )
        superseded = self._supersede_rows([r.id for rows in unmatched.values() for r in rows])
        if kept:
            c = t.document_chunks.c
            self.conn.execute(
                update(t.document_chunks)
                .where(c.id == bindparam("row"))
                .values(version=version, ordinal=bindparam("place"), created_at=func.now()),
                kept,
            )
        if fresh:
            self.conn.execute(insert(t.document_chunks), fresh)
        outcome: Outcome = "replaced" if live else "added"
        return DocumentChange(doc.path, version, outcome, len(chunks), superseded)

    def _live_of(self, agent: str, path: str) -> tuple[ColumnElement[bool], ...]:
        """The conditions naming the live chunks of one document."""
        c = t.document_chunks.c
        return (
            c.tenant == self.tenant,
            c.agent == agent,
            c.path == path,
            c.superseded_at.is_(None),
        )

    def _live(self, agent: str, path: str) -> list[StoredDocChunk]:
        rows = self.conn.execute(
            select(t.document_chunks)
            .where(*self._live_of(agent, path))
            .order_by(t.document_chunks.c.id)
        )
        return [_chunk(r) for r in rows]

    def _supersede(self, agent: str, path: str) -> int:
        done = self.conn.execute(
            update(t.document_chunks)
            .where(*self._live_of(agent, path))
            .values(superseded_at=func.now())
        )
        return int(done.rowcount or 0)

    def _supersede_rows(self, ids: Sequence[int]) -> int:
        if not ids:
            return 0
        c = t.document_chunks.c
        done = self.conn.execute(
            update(t.document_chunks)
            .where(c.tenant == self.tenant, c.id.in_(sorted(ids)), c.superseded_at.is_(None))
            .values(superseded_at=func.now())
        )
        return int(done.rowcount or 0)

    def remove_document(self, agent: str, path: str) -> int:
        """Supersede the live chunks of ``path``; how many. A path with none is an error
        naming the documents there are."""
        AgentsRepo(self.conn, self.tenant).get_agent(agent)
        gone = self._supersede(agent, path)
        if not gone:
            known = ", ".join(d.path for d in self.documents(agent)[:5]) or "none"
            raise UserError(
                f"agent {agent!r} has no document {path!r} (documents: {known}); "
                "see `wakeful docs list`"
            )
        return gone

    def documents(self, agent: str) -> list[DocumentInfo]:
        """``agent``'s live documents, by path."""
        c = t.document_chunks.c
        rows = self.conn.execute(
            select(c.path, c.version, func.count(), func.min(c.created_at))
            .where(c.tenant == self.tenant, c.agent == agent, c.superseded_at.is_(None))
            .group_by(c.path, c.version)
            .order_by(c.path)
        )
        return [DocumentInfo(r[0], r[1], int(r[2]), r[3]) for r in rows]

    def doc_chunks(
        self, agent: str, *, after_id: int = 0, limit: int = 1000, live_only: bool = True
    ) -> list[StoredDocChunk]:
        """``agent``'s chunks with an id past ``after_id``, oldest first (live ones only,
        unless ``live_only`` is False)."""
        c = t.document_chunks.c
        q = select(t.document_chunks).where(
            c.tenant == self.tenant, c.agent == agent, c.id > after_id
        )
        if live_only:
            q = q.where(c.superseded_at.is_(None))
        return [_chunk(r) for r in self.conn.execute(q.order_by(c.id).limit(limit))]

    def max_doc_chunk_id(self, agent: str) -> int:
        c = t.document_chunks.c
        value = self.conn.execute(
            select(func.max(c.id)).where(c.tenant == self.tenant, c.agent == agent)
        ).scalar_one_or_none()
        return int(value or 0)

    def superseded_doc_chunk_count(self, agent: str, *, upto_id: int) -> int:
        """How many of ``agent``'s chunks with ids up to ``upto_id`` are superseded."""
        c = t.document_chunks.c
        value = self.conn.execute(
            select(func.count()).where(
                c.tenant == self.tenant,
                c.agent == agent,
                c.id <= upto_id,
                c.superseded_at.is_not(None),
            )
        ).scalar_one()
        return int(value)

    def superseded_doc_chunks(self, agent: str, *, upto_id: int) -> list[int]:
        """The ids of ``agent``'s superseded chunks up to ``upto_id``, ascending."""
        c = t.document_chunks.c
        rows = self.conn.execute(
            select(c.id)
            .where(
                c.tenant == self.tenant,
                c.agent == agent,
                c.id <= upto_id,
                c.superseded_at.is_not(None),
            )
            .order_by(c.id)
        )
        return [int(r[0]) for r in rows]

    def live_doc_chunks(self, agent: str, ids: Collection[int]) -> set[int]:
        """Which of ``ids`` name live chunks of ``agent`` (not superseded, not another's)."""
        if not ids:
            return set()
        c = t.document_chunks.c
        rows = self.conn.execute(
            select(c.id).where(
                c.tenant == self.tenant,
                c.agent == agent,
                c.id.in_(sorted(ids)),
                c.superseded_at.is_(None),
            )
        )
        return {int(r[0]) for r in rows}


def _chunk(r: object) -> StoredDocChunk:
    m = r._mapping  # type: ignore[attr-defined]
    return StoredDocChunk(
        id=int(m["id"]),
        path=m["path"],
        version=m["version"],
        heading=m["heading"],
        text=m["text"],
        content_hash=m["content_hash"],
        created_at=m["created_at"],
    )
