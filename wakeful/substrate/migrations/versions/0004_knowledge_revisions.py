"""knowledge revisions: transaction time for memories, decisions, summaries, handoff notes

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25 13:05:00.000000

Rows written before this migration get revision 0; rows already superseded, invalidated or
retired get 0 as the revision that did it, so every snapshot read at a revision sees them as
they are today. Compiles recorded before it have no revision: a replay of one reads the
substrate as it is now, as it did before.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def _rev(name: str) -> sa.Column[int]:
    return sa.Column(name, sa.BigInteger(), server_default="0", nullable=False)


def upgrade() -> None:
    op.create_table(
        "knowledge_revisions",
        sa.Column("tenant", sa.Text(), nullable=False),
        sa.Column("agent", sa.Text(), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("tenant", "agent", name=op.f("pk_knowledge_revisions")),
    )
    op.add_column("events", sa.Column("retired_rev", sa.BigInteger(), nullable=True))
    op.add_column("memories", _rev("recorded_rev"))
    op.add_column("memories", sa.Column("invalidated_rev", sa.BigInteger(), nullable=True))
    op.add_column(
        "memories",
        sa.Column(
            "marks", postgresql.JSONB(astext_type=sa.Text()), server_default="[]", nullable=False
        ),
    )
    op.add_column("decisions", _rev("recorded_rev"))
    op.add_column("decisions", sa.Column("superseded_rev", sa.BigInteger(), nullable=True))
    op.add_column("summaries", _rev("recorded_rev"))
    op.add_column("summaries", sa.Column("superseded_rev", sa.BigInteger(), nullable=True))
    op.add_column("handoff_notes", _rev("recorded_rev"))
    op.add_column("compiles", sa.Column("revision", sa.BigInteger(), nullable=True))
    op.add_column("compiles", sa.Column("spec_hash", sa.Text(), nullable=True))
    op.add_column("compiles", sa.Column("recent_limit", sa.Integer(), nullable=True))
    op.execute("UPDATE events SET retired_rev = 0 WHERE retired_at IS NOT NULL")
    op.execute("UPDATE memories SET invalidated_rev = 0 WHERE invalidated_at IS NOT NULL")
    op.execute("UPDATE decisions SET superseded_rev = 0 WHERE superseded_by IS NOT NULL")
    op.execute("UPDATE summaries SET superseded_rev = 0 WHERE superseded_by IS NOT NULL")


def downgrade() -> None:
    op.drop_column("compiles", "recent_limit")
    op.drop_column("compiles", "spec_hash")
    op.drop_column("compiles", "revision")
    op.drop_column("handoff_notes", "recorded_rev")
    op.drop_column("summaries", "superseded_rev")
    op.drop_column("summaries", "recorded_rev")
    op.drop_column("decisions", "superseded_rev")
    op.drop_column("decisions", "recorded_rev")
    op.drop_column("memories", "marks")
    op.drop_column("memories", "invalidated_rev")
    op.drop_column("memories", "recorded_rev")
    op.drop_column("events", "retired_rev")
    op.drop_table("knowledge_revisions")
