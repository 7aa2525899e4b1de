"""wakes: an index on the start time, per agent

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-08 10:00:00.000000

An agent with a daily spend cap reads what its wakes of the day cost before each model call
(``TenantStore.spend_since``); the index finds a day's wakes without reading all of them.
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_wakes_started_at", "wakes", ["tenant", "agent", "started_at"])


def downgrade() -> None:
    op.drop_index("ix_wakes_started_at", table_name="wakes")
