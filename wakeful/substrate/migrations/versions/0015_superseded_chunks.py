"""superseded chunks: an index of each agent's superseded document chunks

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-21 10:00:00.000000

Every catch-up of a vector index counts an agent's superseded chunks up to its cursor, and
deletes their points when the count moved (``EventIndex._sweep_docs``). A partial index
keeps that count to the superseded rows, however many live ones an agent has.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_document_chunks_superseded",
        "document_chunks",
        ["tenant", "agent", "id"],
        postgresql_where=sa.text("superseded_at IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_document_chunks_superseded", table_name="document_chunks")
