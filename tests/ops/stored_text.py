"""A tenant's rows as searchable text: what a test greps for a secret that must not be stored."""

from __future__ import annotations

import json

from sqlalchemy import select

from wakeful.substrate import schema
from wakeful.substrate.store import Store


def everything_stored(store: Store, tenant: str) -> str:
    """Every row of every tenant-scoped table, as one searchable text."""
    parts: list[str] = []
    with store.engine.connect() as conn:
        for table in schema.metadata.sorted_tables:
            if "tenant" in table.c:
                rows = conn.execute(select(table).where(table.c.tenant == tenant))
                parts += [json.dumps(dict(r._mapping), default=str) for r in rows]
    return "\n".join(parts)
