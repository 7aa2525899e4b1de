"""events: an index on the revision that retired them

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25 14:40:00.000000

A partial index (retired events only): the agent's newest retirement is one index lookup,
which tells a cached snapshot tail whether it is still exact (``substrate/tail_cache.py``).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_events_retired_rev",
        "events",
        ["tenant", "agent", "retired_rev"],
        postgresql_where=sa.text("retired_rev IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_events_retired_rev", table_name="events")
