"""wakes: an index on the idempotency key

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25 16:10:00.000000

An agent workflow remembers the results of its recent wakes only; a trigger whose key it
no longer remembers is looked up here, so the same event never wakes the agent twice.
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_wakes_idempotency_key", "wakes", ["tenant", "agent", "idempotency_key", "number"]
    )


def downgrade() -> None:
    op.drop_index("ix_wakes_idempotency_key", table_name="wakes")
