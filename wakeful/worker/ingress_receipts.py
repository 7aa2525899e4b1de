"""Delivery receipts: which event an agent's webhook idempotency key belongs to.

The agent's workflow already ignores a trigger whose key it has seen, so a duplicate
delivery never wakes twice. Receipts add what the workflow cannot know: whether a repeated
key came with the *same* event (a sender retry: answered as a duplicate) or a *different*
one (a sender bug or a forgery by someone holding the secret: answered 409 rather than
silently dropped). They live in Postgres, so every ingress replica and every restart sees
them.

A receipt is a claim (:mod:`wakeful.substrate.claims`), won atomically before the trigger
is delivered: of concurrent deliveries with one key, one event wins and the others are
refused, none is lost. A claim whose delivery failed is released, so the sender's retry is
delivered. Only digests are stored: the key as the sender sent it is never written.
"""

from __future__ import annotations

import hashlib

from wakeful.compiler.canonical import canonical_json
from wakeful.substrate.claims import Claim
from wakeful.substrate.store import TenantStore
from wakeful.worker.ingress_events import WebhookEvent

__all__ = ["Receipts", "event_digest", "key_digest"]


def event_digest(event: WebhookEvent) -> str:
    """What a retry must repeat: the event without its id, in canonical JSON.

    Canonical, so a sender that re-serialises the same event (other key order, other
    whitespace) is still recognised as retrying it.
    """
    body = event.model_dump(mode="json", exclude={"id"})
    return hashlib.sha256(canonical_json(body).encode()).hexdigest()


def key_digest(key: str) -> str:
    """The SHA-256 of a sender's idempotency key: what a claim stores in its place."""
    return hashlib.sha256(key.encode()).hexdigest()


class Receipts:
    """One agent's claims, by the sender's key and the event's digest."""

    def __init__(self, ts: TenantStore, agent: str) -> None:
        self._ts = ts
        self._agent = agent

    def claim(self, key: str, digest: str) -> Claim:
        return self._ts.claim_delivery(self._agent, key_digest(key), digest)

    def delivered(self, key: str, digest: str) -> None:
        self._ts.claim_delivered(self._agent, key_digest(key), digest)

    def release(self, key: str, digest: str) -> None:
        self._ts.release_claim(self._agent, key_digest(key), digest)
