"""decisions: a registry agents and people write: keys, rationale, source, retirement

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-10 10:00:00.000000

Decisions were written by consolidation's promotion rules only. The model (the built-in
``remember_decision`` tool) and people (``wakeful decisions``) now write them too, under a
stable ``key``: a new decision on a live key supersedes the old one. ``source`` says who
wrote it (rows written before are consolidation's). A decision is retired explicitly
(``retired_*``), and one past its expiry is retired by the compile that first sees it, which
names it in its ledger: expiry is announced, never silent.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("decisions", sa.Column("key", sa.Text(), nullable=True))
    op.add_column("decisions", sa.Column("rationale", sa.Text(), nullable=True))
    op.add_column(
        "decisions",
        sa.Column("source", sa.Text(), nullable=False, server_default="consolidation"),
    )
    op.add_column("decisions", sa.Column("retired_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("decisions", sa.Column("retired_by", sa.Text(), nullable=True))
    op.add_column("decisions", sa.Column("retired_rev", sa.BigInteger(), nullable=True))
    op.create_index("ix_decisions_key", "decisions", ["tenant", "agent", "key"])


def downgrade() -> None:
    op.drop_index("ix_decisions_key", table_name="decisions")
    for column in ("retired_rev", "retired_by", "retired_at", "source", "rationale", "key"):
        op.drop_column("decisions", column)
