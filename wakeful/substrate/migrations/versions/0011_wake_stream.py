"""wake_stream: what a streaming model call has said so far

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-14 10:00:00.000000

Text pieces and tool calls of a model call as they stream in, for a caller to tail while
the wake runs (announced on the ``wakeful_stream`` channel); an agent keeps its latest
wake's only.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "wake_stream",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("tenant", sa.Text(), nullable=False),
        sa.Column("agent", sa.Text(), nullable=False),
        sa.Column("wake_id", sa.Text(), nullable=False),
        sa.Column("call_index", sa.Integer(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("data", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_wake_stream")),
    )
    op.create_index("ix_wake_stream_wake", "wake_stream", ["tenant", "wake_id", "id"])
    op.create_index("ix_wake_stream_agent", "wake_stream", ["tenant", "agent"])


def downgrade() -> None:
    op.drop_index("ix_wake_stream_agent", table_name="wake_stream")
    op.drop_index("ix_wake_stream_wake", table_name="wake_stream")
    op.drop_table("wake_stream")
