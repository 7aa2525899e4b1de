"""Delivery receipts: which idempotency keys an agent accepted from webhooks, and for what.

The agent's workflow already ignores a trigger whose key it has seen, so a duplicate
delivery never wakes twice. Receipts add what the workflow cannot know: whether a repeated
key came with the *same* event (a sender retry: answered as a duplicate) or a *different*
one (a sender bug or a forgery by someone holding the secret: answered 409 rather than
silently dropped). They live in Postgres, so every ingress replica and every restart sees
them.

A receipt is two content-addressed rows in the tenant's blob store: one whose content is
the (agent, key) pair, one whose content is (agent, key, event digest). Content addressing
makes both lookups a primary-key probe and both writes idempotent, with no table of its
own. Receipts are written only after Temporal accepted the trigger.
"""

from __future__ import annotations

import hashlib
from enum import StrEnum

from wakeful.compiler.blocks import content_hash
from wakeful.compiler.framing import canonical_json
from wakeful.errors import StoreError
from wakeful.substrate.store import TenantStore
from wakeful.worker.ingress_events import WebhookEvent

__all__ = ["Receipt", "Receipts", "event_digest"]

_KIND = "webhook_receipt"


class Receipt(StrEnum):
    NEW = "new"
    DUPLICATE = "duplicate"
    CONFLICT = "conflict"


def event_digest(event: WebhookEvent) -> str:
    """What a retry must repeat: the event without its id, in canonical JSON.

    Canonical, so a sender that re-serialises the same event (other key order, other
    whitespace) is still recognised as retrying it.
    """
    body = event.model_dump(mode="json", exclude={"id"})
    return hashlib.sha256(canonical_json(body).encode()).hexdigest()


class Receipts:
    def __init__(self, ts: TenantStore, agent: str) -> None:
        self._ts = ts
        self._agent = agent

    def _key_doc(self, key: str) -> str:
        return canonical_json({"receipt": "webhook-key", "agent": self._agent, "key": key})

    def _event_doc(self, key: str, digest: str) -> str:
        return canonical_json(
            {"receipt": "webhook-event", "agent": self._agent, "key": key, "event": digest}
        )

    def _exists(self, doc: str) -> bool:
        try:
            self._ts.get_blob(content_hash(doc))
        except StoreError:
            return False
        return True

    def check(self, key: str, digest: str) -> Receipt:
        if self._exists(self._event_doc(key, digest)):
            return Receipt.DUPLICATE
        if self._exists(self._key_doc(key)):
            return Receipt.CONFLICT
        return Receipt.NEW

    def record(self, key: str, digest: str) -> None:
        self._ts.put_blob(_KIND, self._event_doc(key, digest))
        self._ts.put_blob(_KIND, self._key_doc(key))
