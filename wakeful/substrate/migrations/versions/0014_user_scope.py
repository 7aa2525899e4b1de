"""user scope: wakes, events, memories, decisions and handoff notes name their user

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-20 10:00:00.000000

A wake may serve one user (``wakeful.users``): what it writes is stored with that user, and
a wake reads agent-wide rows (``user_id`` NULL) and its own user's only. Every row written
before this revision is agent-wide, which is what a wake without a user has always read.
The columns are nullable with no default: adding them rewrites no table.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_TABLES = ("wakes", "events", "memories", "decisions", "handoff_notes")


def upgrade() -> None:
    for table in _TABLES:
        op.add_column(table, sa.Column("user_id", sa.Text(), nullable=True))


def downgrade() -> None:
    for table in reversed(_TABLES):
        op.drop_column(table, "user_id")
