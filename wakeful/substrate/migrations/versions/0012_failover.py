"""failover: windows per fallback route, who served a call, provider cool-downs

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-14 12:00:00.000000

A compile of an agent with fallbacks stores the window rendered for each of them
(``compiles.alternates``); a model call that a fallback served says which and why
(``model_calls.failover``); a provider that failed is skipped until its cool-down ends
(``provider_cooldowns``).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("compiles", sa.Column("alternates", postgresql.JSONB(), nullable=True))
    op.add_column("model_calls", sa.Column("failover", postgresql.JSONB(), nullable=True))
    op.create_table(
        "provider_cooldowns",
        sa.Column("tenant", sa.Text(), nullable=False),
        sa.Column("route", sa.Text(), nullable=False),
        sa.Column("until", sa.DateTime(timezone=True), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("tenant", "route", name=op.f("pk_provider_cooldowns")),
    )


def downgrade() -> None:
    op.drop_table("provider_cooldowns")
    op.drop_column("model_calls", "failover")
    op.drop_column("compiles", "alternates")
