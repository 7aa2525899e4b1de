"""Webhook delivery claims: which event an agent's idempotency key belongs to.

:class:`ClaimsRepo` works on one tenant's claims, on the connection it is given (a unit of
work's: :mod:`wakeful.substrate.unit_of_work`). A claim is won atomically — ``INSERT ... ON
CONFLICT DO NOTHING``, then the row that stands is read — so of any number of concurrent
deliveries with one key, exactly one event wins. Only digests are stored (a sender's key
may hold a secret).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sqlalchemy import bindparam, delete, func, select
from sqlalchemy.dialects.postgresql import insert

from wakeful.substrate import schema as t
from wakeful.substrate.tenant_repo import TenantRepo

__all__ = ["Claim", "ClaimState", "ClaimsRepo"]

ClaimState = Literal["claimed", "delivered", "legacy"]


@dataclass(frozen=True)
class Claim:
    """The outcome of a claim: ``won`` (this call made it), else whether the standing claim
    is for the same event, and its state."""

    won: bool
    same_event: bool
    state: ClaimState


class ClaimsRepo(TenantRepo):
    """One tenant's webhook delivery claims, on one connection."""

    def claim_delivery(self, agent: str, key_digest: str, event_digest: str) -> Claim:
        """Claim ``key_digest`` for ``event_digest``, or report the claim that stands."""
        params = {"tenant": self.tenant, "agent": agent, "key": key_digest, "event": event_digest}
        if self.conn.execute(_CLAIM, params).first() is not None:
            return Claim(won=True, same_event=True, state="claimed")
        # A concurrent claim waited on the unique key: it is committed by now.
        row = self.conn.execute(_STANDING, params).one()
        return Claim(won=False, same_event=row.event_digest == event_digest, state=row.state)

    def claim_delivered(self, agent: str, key_digest: str, event_digest: str) -> None:
        """Temporal has the event: mark its claim (making it again if it was released
        meanwhile; never taking over another event's claim)."""
        stmt = insert(t.webhook_claims).values(
            tenant=self.tenant,
            agent=agent,
            key_digest=key_digest,
            event_digest=event_digest,
            state="delivered",
        )
        c = t.webhook_claims.c
        self.conn.execute(
            stmt.on_conflict_do_update(
                index_elements=["tenant", "agent", "key_digest"],
                set_={"state": "delivered", "updated_at": func.now()},
                where=(c.event_digest == stmt.excluded.event_digest) & (c.state == "claimed"),
            )
        )

    def release_claim(self, agent: str, key_digest: str, event_digest: str) -> None:
        """The event could not be delivered: free its key for the sender's retry (any body)."""
        c = t.webhook_claims.c
        self.conn.execute(
            delete(t.webhook_claims).where(
                c.tenant == self.tenant,
                c.agent == agent,
                c.key_digest == key_digest,
                c.event_digest == event_digest,
                c.state == "claimed",
            )
        )


_CLAIM = (
    insert(t.webhook_claims)
    .values(
        tenant=bindparam("tenant"),
        agent=bindparam("agent"),
        key_digest=bindparam("key"),
        event_digest=bindparam("event"),
        state="claimed",
    )
    .on_conflict_do_nothing(index_elements=["tenant", "agent", "key_digest"])
    .returning(t.webhook_claims.c.state)
)
_STANDING = select(t.webhook_claims.c.event_digest, t.webhook_claims.c.state).where(
    t.webhook_claims.c.tenant == bindparam("tenant"),
    t.webhook_claims.c.agent == bindparam("agent"),
    t.webhook_claims.c.key_digest == bindparam("key"),
)
