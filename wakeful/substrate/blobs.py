"""Blobs: the claim-check store of windows, ledgers, model outputs and tool results.

:class:`BlobsRepo` works on one tenant's blobs, on the connection it is given (a unit of
work's: :mod:`wakeful.substrate.unit_of_work`). Blobs are content-addressed, so a write is
idempotent; windows are stored in chunks that later windows share
(:mod:`wakeful.substrate.blob_chunks`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import ARRAY, Text, any_, bindparam, func, select
from sqlalchemy.dialects.postgresql import insert

from wakeful.compiler.blocks import content_hash
from wakeful.errors import StoreError
from wakeful.substrate import blob_chunks
from wakeful.substrate import schema as t
from wakeful.substrate.pg_safe import pg_text
from wakeful.substrate.tenant_repo import TenantRepo

__all__ = ["STORE_BLOB_ROWS", "BlobsRepo", "blob_arrays"]


def blob_arrays(tenant: str, rows: Sequence[Mapping[str, str]]) -> dict[str, Any]:
    """The parameters of :data:`STORE_BLOB_ROWS` for rows of :meth:`BlobsRepo.blob_rows`."""
    return {
        "b_tenant": tenant,
        "b_hashes": [r["hash"] for r in rows],
        "b_kinds": [r["kind"] for r in rows],
        "b_contents": [r["content"] for r in rows],
    }


class BlobsRepo(TenantRepo):
    """One tenant's blobs, on one connection."""

    def put_blob(self, kind: str, content: str) -> str:
        (digest,) = self.put_blobs([(kind, content)])
        return digest

    def put_blobs(self, items: Sequence[tuple[str, str]]) -> list[str]:
        """Store ``(kind, content)`` blobs in one statement; their hashes, in order.

        Content-addressed: a blob stored before is left as it is (Postgres checks the key
        before it compresses and writes the row, so a repeat costs little). Windows are
        stored in chunks that windows share (:mod:`wakeful.substrate.blob_chunks`): only
        the chunks not stored yet are sent.
        """
        digests, rows = self.blob_rows(items)
        if rows:
            # A parameter list, not ``.values([...])``: SQLAlchemy caches the compiled
            # statement and still sends the rows as one multi-row INSERT.
            self.conn.execute(_PUT_BLOB, rows)
        return digests

    def blob_rows(self, items: Sequence[tuple[str, str]]) -> tuple[list[str], list[dict[str, str]]]:
        """The hashes of ``(kind, content)`` blobs, in order, and the rows
        :meth:`put_blobs` writes for them (``tenant``, ``hash``, ``kind``, ``content``):
        for a statement that writes them with another row. Reads which of a chunked
        window's chunks are stored already, when there is one."""
        # Addressed by what is stored: text Postgres refuses is replaced first (pg_safe).
        items = [(kind, pg_text(content)) for kind, content in items]
        digests = [content_hash(content) for _, content in items]
        rows: dict[str, dict[str, str]] = {}
        chunks: dict[str, str] = {}

        def row(digest: str, kind: str, content: str) -> None:
            rows.setdefault(
                digest, {"tenant": self.tenant, "hash": digest, "kind": kind, "content": content}
            )

        for digest, (kind, content) in zip(digests, items, strict=True):
            parts = blob_chunks.split(content) if blob_chunks.chunked(kind, content) else []
            # One chunk would be the whole blob under its own hash: a manifest of itself.
            if len(parts) > 1:
                hashes = [content_hash(part) for part in parts]
                chunks.update(zip(hashes, parts, strict=True))
                kind, content = blob_chunks.manifest(kind, hashes)
            row(digest, kind, content)
        if not rows:
            return digests, []
        if chunks:
            params = {"tenant": self.tenant, "hashes": list(chunks)}
            stored = set(self.conn.execute(_STORED_HASHES, params).scalars())
            for digest, part in chunks.items():
                if digest not in stored:
                    row(digest, blob_chunks.CHUNK_KIND, part)
        return digests, list(rows.values())

    def get_blob(self, digest: str) -> str:
        row = self.conn.execute(_GET_BLOB, {"tenant": self.tenant, "hash": digest}).first()
        if row is None:
            raise StoreError(f"no blob {digest} in tenant {self.tenant!r}")
        if not blob_chunks.is_manifest(row.kind):
            return str(row.content)
        hashes: list[str] = json.loads(row.content)
        rows = self.conn.execute(_GET_CHUNKS, {"tenant": self.tenant, "hashes": hashes})
        found = {h: content for h, content in rows}
        text = "".join(found.get(h, "") for h in hashes)
        if content_hash(text) != digest:
            missing = sorted(set(hashes) - set(found))
            raise StoreError(
                f"blob {digest} in tenant {self.tenant!r} is damaged: its chunks"
                + (f" {', '.join(missing)} are missing" if missing else " do not add up to it")
            )
        return text


_GET_BLOB = select(t.blobs.c.kind, t.blobs.c.content).where(
    t.blobs.c.tenant == bindparam("tenant"), t.blobs.c.hash == bindparam("hash")
)
_STORED_HASHES = select(t.blobs.c.hash).where(
    t.blobs.c.tenant == bindparam("tenant"), t.blobs.c.hash == any_(bindparam("hashes"))
)
_GET_CHUNKS = select(t.blobs.c.hash, t.blobs.c.content).where(
    t.blobs.c.tenant == bindparam("tenant"), t.blobs.c.hash == any_(bindparam("hashes"))
)
_PUT_BLOB = insert(t.blobs).on_conflict_do_nothing(index_elements=["tenant", "hash"])
# Rows of blobs as arrays (``blob_arrays``), unnested in step: one statement however many
# rows, compiled once; a write of another row runs it as a CTE of its own statement.
STORE_BLOB_ROWS = (
    insert(t.blobs)
    .from_select(
        ["tenant", "hash", "kind", "content"],
        select(
            bindparam("b_tenant", type_=Text),
            func.unnest(bindparam("b_hashes", type_=ARRAY(Text))),
            func.unnest(bindparam("b_kinds", type_=ARRAY(Text))),
            func.unnest(bindparam("b_contents", type_=ARRAY(Text))),
        ),
    )
    .on_conflict_do_nothing(index_elements=["tenant", "hash"])
)
