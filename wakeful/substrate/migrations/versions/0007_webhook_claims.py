"""webhook_claims: atomic delivery claims, replacing receipt blobs

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 10:00:00.000000

Receipts were two content-addressed blobs per delivery, checked then written: concurrent
deliveries of one key all passed the check, and a blob of another kind with the same text
passed for a receipt. Claims are rows of their own, won atomically, holding digests only.

Receipts already written become ``legacy`` claims (their events were woken under a trigger
key that carried the raw key, so a repeat is answered as a duplicate without delivering it
again), and the receipt blobs, which held the raw keys, are deleted.
"""

from __future__ import annotations

import hashlib
import json

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "webhook_claims",
        sa.Column("tenant", sa.Text(), nullable=False),
        sa.Column("agent", sa.Text(), nullable=False),
        sa.Column("key_digest", sa.Text(), nullable=False),
        sa.Column("event_digest", sa.Text(), nullable=False),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.Column(
            "updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.PrimaryKeyConstraint("tenant", "agent", "key_digest", name="pk_webhook_claims"),
    )
    conn = op.get_bind()
    rows = conn.execute(
        sa.text("SELECT tenant, content FROM blobs WHERE kind = 'webhook_receipt'")
    ).all()
    claims = {}
    for tenant, content in rows:
        try:
            doc = json.loads(content)
        except ValueError:
            continue
        if not isinstance(doc, dict) or doc.get("receipt") != "webhook-event":
            continue
        agent, key, event = doc.get("agent"), doc.get("key"), doc.get("event")
        if not (isinstance(agent, str) and isinstance(key, str) and isinstance(event, str)):
            continue
        digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
        claims[(tenant, agent, digest)] = event
    if claims:
        conn.execute(
            sa.text(
                "INSERT INTO webhook_claims (tenant, agent, key_digest, event_digest, state)"
                " VALUES (:tenant, :agent, :key_digest, :event_digest, 'legacy')"
                " ON CONFLICT DO NOTHING"
            ),
            [
                {"tenant": t, "agent": a, "key_digest": k, "event_digest": e}
                for (t, a, k), e in claims.items()
            ],
        )
    conn.execute(sa.text("DELETE FROM blobs WHERE kind = 'webhook_receipt'"))


def downgrade() -> None:
    op.drop_table("webhook_claims")
