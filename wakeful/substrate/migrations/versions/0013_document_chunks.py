"""document_chunks: an agent's documents, chunked by structure, versioned by content

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-14 10:00:00.000000

``wakeful docs add`` (and ``Agent(documents=...)``) store each file as chunks: a markdown
section, a paragraph, a fenced code block, a top-level definition of a code file. Each row
carries the file's path, the heading trail it sits under and the file's version (the hash
of its text). Adding a changed file supersedes the live chunks of its path
(``superseded_at``); adding it unchanged does nothing; removing it supersedes them too.
Rows are never deleted: the vector index is derived from them (a cursor per index
identity over ``id``) and retrieval keeps only the chunks still live here.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "document_chunks",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("tenant", sa.Text(), nullable=False),
        sa.Column("agent", sa.Text(), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("version", sa.Text(), nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("heading", sa.Text(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("content_hash", sa.Text(), nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.Column("superseded_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_document_chunks"),
    )
    op.create_index("ix_document_chunks_path", "document_chunks", ["tenant", "agent", "path", "id"])
    op.create_index("ix_document_chunks_agent", "document_chunks", ["tenant", "agent", "id"])


def downgrade() -> None:
    op.drop_index("ix_document_chunks_agent", table_name="document_chunks")
    op.drop_index("ix_document_chunks_path", table_name="document_chunks")
    op.drop_table("document_chunks")
