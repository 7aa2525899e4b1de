"""Idempotency keys from the outside world, as Wakeful stores and sends them.

A sender's key (a webhook's event id or ``Idempotency-Key`` header, ``wakeful trigger
--key``) may carry anything, a secret included. It is never stored or sent to Temporal as
given: the trigger carries ``<source>:<digest>``, a SHA-256 of the key, which dedups the
same deliveries just as well and reveals nothing. The sender keeps its own key; Wakeful
answers with it, never logs or stores it.
"""

from __future__ import annotations

import hashlib

__all__ = ["trigger_key"]

_DIGEST_CHARS = 32  # 128 bits: collisions between a sender's keys are not a concern


def trigger_key(source: str, key: str) -> str:
    """The key a trigger carries for the sender's ``key``: ``<source>:<hex digest>``.

    ``source`` (``webhook``, ``cli``) namespaces it, so a sender's ``"1"`` never collides
    with a key from another way in.
    """
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{source}:{digest[:_DIGEST_CHARS]}"
