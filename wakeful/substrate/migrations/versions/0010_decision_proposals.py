"""decisions: a model's decision on a person's key is a proposal, not a successor

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-12 10:00:00.000000

A decision a person wrote stands until a person changes it. What the model (or the
promotion rules) records on a key whose current decision is a person's is kept as a
proposal: ``proposal_for`` names the person's decision it would replace. A proposal is not
live (the registry does not hold it as a decision), is listed by ``wakeful decisions list``
and shown to the model as pending, and ends when a person accepts it (a person's decision
on the key supersedes it) or retires it.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("decisions", sa.Column("proposal_for", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("decisions", "proposal_for")
