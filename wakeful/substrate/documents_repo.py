"""An agent's documents in Postgres: chunk rows by path and version.

:class:`DocumentsRepo` works on one tenant's rows, on the connection it is given (a unit of
work's). Adding a file whose live version is the same does nothing; a changed one
supersedes the live chunks of its path and adds the new ones, in one transaction, under a
lock on the path, so two concurrent adds of one file leave one live version.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from sqlalchemy import func, insert, select, text, update
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
    superseded: int  # chunks of an older version superseded by this add


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
        superseded = self._supersede(agent, doc.path)
        self.conn.execute(
            insert(t.document_chunks),
            [
                {
                    "tenant": self.tenant,
                    "agent": agent,
                    "path": doc.path,
                    "version": version,
                    "ordinal": i,
                    "heading": ch.heading,
                    "text": ch.text,
                    "content_hash": chunk_hash(doc.path, ch.text),
                }
                for i, ch in enumerate(chunks)
            ],
        )
        outcome: Outcome = "replaced" if superseded else "added"
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
