"""The Alembic migrations build exactly the schema that ``wakeful.substrate.schema`` declares.

A column added to ``schema.py`` without a migration (or a migration that drifts from it)
would pass every repository test on a fresh database built by ``metadata.create_all`` and
then fail on a deployed one; the repositories only ever run on migrated databases.
"""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from wakeful.substrate.schema import metadata
from wakeful.substrate.store import Store


def test_migrated_database_matches_the_declared_schema(store: Store) -> None:
    with store.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        diff = compare_metadata(context, metadata)
    assert diff == [], f"schema.py and the migrations disagree: {diff}"
