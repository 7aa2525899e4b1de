"""Webhook signatures: HMAC-SHA256 over ``"<t>.<raw body>"``, per tenant, with a replay window.

The sender puts one header on every delivery::

    X-Wakeful-Signature: t=1767225600,v1=5257a869e7ec...8d8bd  (64 hex characters)

``t`` is the Unix time of signing, in seconds; each ``v1`` is the hex HMAC-SHA256 of
``f"{t}.{body}"`` keyed with the tenant's secret. Several ``v1`` values may be sent while a
secret is rotated (sign with the old and the new secret); one match is enough. Signing the
timestamp with the body means a captured request cannot be replayed once ``t`` falls
outside the replay window.

Senders with Standard Webhooks tooling (https://www.standardwebhooks.com) may sign that way
instead, with the same secret (a ``whsec_...`` secret is its base64 key; any other secret
is used as its bytes)::

    webhook-id: msg_2KWPBgLlAfxdpx2AI54pPJ85f4W
    webhook-timestamp: 1767225600
    webhook-signature: v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=

each ``v1,`` value the base64 HMAC-SHA256 of ``f"{id}.{timestamp}.{body}"`` (several,
space-separated, while a secret is rotated); the same replay window applies, and
``webhook-id`` is the delivery's idempotency key when the event names none.

Verification answers in terms the HTTP layer maps to statuses: :class:`AuthFailure` with
``status`` 401 (missing, malformed, stale or wrong signature; no secret configured) or 403
(the signature is valid under *another* tenant's secret: a real sender pointed at the wrong
tenant). Comparisons are constant-time.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from pydantic import SecretStr
from standardwebhooks.webhooks import Webhook

from wakeful.names import check_tenant
from wakeful.worker.settings import Settings

__all__ = [
    "SIGNATURE_HEADER",
    "STANDARD_HEADERS",
    "AuthFailure",
    "Signature",
    "TenantSecrets",
    "parse_signature",
    "parse_standard",
    "precheck",
    "sign",
    "signature_header",
    "signature_of",
    "standard_sign",
    "verify",
    "verify_body",
]

SIGNATURE_HEADER = "X-Wakeful-Signature"
STANDARD_HEADERS = ("webhook-id", "webhook-timestamp", "webhook-signature")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_MAX_HEADER = 2048


class AuthFailure(Exception):
    """Why a delivery is not authenticated; ``code`` is stable, ``message`` says the fix."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Signature:
    timestamp: int
    v1: tuple[str, ...]
    message_id: str | None = None  # set: a Standard Webhooks signature of this message id


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The hex ``v1`` signature of ``body`` signed at ``timestamp``."""
    message = str(timestamp).encode() + b"." + body
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def signature_header(secrets: list[str] | str, timestamp: int, body: bytes) -> str:
    """The full header value a sender would send (one ``v1`` per secret)."""
    keys = [secrets] if isinstance(secrets, str) else secrets
    return ",".join([f"t={timestamp}", *(f"v1={sign(k, timestamp, body)}" for k in keys)])


def signature_of(headers: Mapping[str, str]) -> Signature:
    """The delivery's signature: ``X-Wakeful-Signature``, else the Standard Webhooks headers."""
    own = headers.get(SIGNATURE_HEADER)
    if own or not headers.get("webhook-signature"):
        return parse_signature(own)
    return parse_standard(*(headers.get(h) for h in STANDARD_HEADERS))


def parse_standard(message_id: str | None, timestamp: str | None, header: str | None) -> Signature:
    """The Standard Webhooks headers: id, timestamp and space-separated ``v1,<base64>``."""
    if not message_id or not timestamp or not header:
        raise AuthFailure(
            401,
            "malformed_signature",
            "a Standard Webhooks delivery needs webhook-id, webhook-timestamp and "
            "webhook-signature",
        )
    if max(len(message_id), len(header)) > _MAX_HEADER:
        raise AuthFailure(401, "malformed_signature", "webhook-id or webhook-signature is too long")
    if not re.fullmatch(r"\d{1,12}", timestamp.strip()):
        raise AuthFailure(
            401, "malformed_signature", "webhook-timestamp must be unix seconds (an integer)"
        )
    v1 = tuple(p[3:] for p in header.split() if p.startswith("v1,") and _is_base64(p[3:]))
    if not v1:
        raise AuthFailure(
            401,
            "malformed_signature",
            "webhook-signature needs at least one v1,<base64 HMAC-SHA256>",
        )
    return Signature(timestamp=int(timestamp.strip()), v1=v1, message_id=message_id)


def _is_base64(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return False
    return bool(text)


def standard_sign(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """The base64 Standard Webhooks signature (without ``v1,``): a ``whsec_`` secret is its
    base64 key, any other secret its UTF-8 bytes."""
    key: str | bytes = secret if secret.startswith("whsec_") else secret.encode()
    signed = Webhook(key).sign(message_id, datetime.fromtimestamp(timestamp, UTC), body.decode())
    return signed.removeprefix("v1,")


def parse_signature(header: str | None) -> Signature:
    if not header:
        raise AuthFailure(
            401,
            "missing_signature",
            f"missing {SIGNATURE_HEADER} header: send t=<unix seconds>,v1=<hex HMAC-SHA256 of "
            "'<t>.<raw body>' keyed with the tenant's webhook secret> (or sign with Standard "
            "Webhooks: webhook-id, webhook-timestamp, webhook-signature)",
        )
    if len(header) > _MAX_HEADER:
        raise AuthFailure(401, "malformed_signature", f"{SIGNATURE_HEADER} header is too long")
    timestamps: list[str] = []
    v1: list[str] = []
    for part in header.split(","):
        key, sep, value = part.strip().partition("=")
        if not sep:
            continue
        if key == "t":
            timestamps.append(value.strip())
        elif key == "v1":
            v1.append(value.strip().lower())
        # Unknown schemes (a future v2) are ignored so senders can add them first.
    if len(timestamps) != 1 or not re.fullmatch(r"\d{1,12}", timestamps[0]):
        raise AuthFailure(
            401,
            "malformed_signature",
            f"{SIGNATURE_HEADER} needs exactly one t=<unix seconds> (an integer)",
        )
    good = tuple(sig for sig in v1 if _HEX64.fullmatch(sig))
    if not good:
        raise AuthFailure(
            401,
            "malformed_signature",
            f"{SIGNATURE_HEADER} needs at least one v1=<64 hex characters>",
        )
    return Signature(timestamp=int(timestamps[0]), v1=good)


class TenantSecrets:
    """Which secrets sign which tenant's webhooks, built from :class:`Settings`.

    ``webhook_secret`` signs the default tenant (``settings.tenant``);
    ``webhook_tenant_secrets`` adds the others. A tenant named in both accepts either,
    which also lets an operator rotate the default tenant's secret without downtime.
    """

    def __init__(self, by_tenant: Mapping[str, tuple[SecretStr, ...]]) -> None:
        for tenant in by_tenant:
            check_tenant(tenant, "the webhook secrets")
        self._by_tenant = {
            t: tuple(s for s in keys if s.get_secret_value()) for t, keys in by_tenant.items()
        }

    @classmethod
    def from_settings(cls, settings: Settings) -> TenantSecrets:
        table: dict[str, list[SecretStr]] = {}
        if settings.webhook_secret is not None:
            table.setdefault(settings.tenant, []).append(settings.webhook_secret)
        for tenant, secret in sorted(settings.webhook_tenant_secrets.items()):
            table.setdefault(tenant, []).append(secret)
        return cls({t: tuple(keys) for t, keys in table.items()})

    def of(self, tenant: str) -> tuple[SecretStr, ...]:
        return self._by_tenant.get(tenant, ())

    def others(self, tenant: str) -> list[SecretStr]:
        return [s for t, keys in sorted(self._by_tenant.items()) if t != tenant for s in keys]

    @property
    def tenants(self) -> list[str]:
        return sorted(t for t, keys in self._by_tenant.items() if keys)


def _matches(secret: SecretStr, sig: Signature, body: bytes) -> bool:
    key = secret.get_secret_value()
    if sig.message_id is not None:
        try:
            expected = standard_sign(key, sig.message_id, sig.timestamp, body)
        except (UnicodeDecodeError, binascii.Error, ValueError):
            return False  # a body that is not UTF-8, or a whsec_ secret that is not base64
    else:
        expected = sign(key, sig.timestamp, body)
    # Check every v1 (no early exit) so timing does not say which one matched.
    hits = [hmac.compare_digest(expected, given) for given in sig.v1]
    return any(hits)


def precheck(
    secrets: TenantSecrets,
    tenant: str,
    header: str | Mapping[str, str] | None,
    *,
    now: float,
    window_s: int,
) -> Signature:
    """What can be checked before the body is read: the header is there and well formed,
    its timestamp is inside the replay window, and the tenant has a secret. An unsigned or
    stale delivery is refused without reading (or buffering) its body. ``header`` is the
    ``X-Wakeful-Signature`` value, or the request's headers (either scheme)."""
    sig = (
        parse_signature(header)
        if header is None or isinstance(header, str)
        else (signature_of(header))
    )
    skew = now - sig.timestamp
    if abs(skew) > window_s:
        where = "old" if skew > 0 else "far in the future"
        raise AuthFailure(
            401,
            "stale_signature",
            f"signature timestamp is {abs(int(skew))} s {where}; deliveries must be signed "
            f"within {window_s} s of receipt (check the sender's clock, then re-sign)",
        )
    if not secrets.of(tenant):
        raise AuthFailure(
            401,
            "no_secret",
            "deliveries for this tenant are refused: no webhook signing secret is configured "
            "for it (WAKEFUL_WEBHOOK_SECRET or WAKEFUL_WEBHOOK_TENANT_SECRETS)",
        )
    return sig


def verify_body(secrets: TenantSecrets, tenant: str, sig: Signature, body: bytes) -> None:
    """Check a prechecked signature against the body, or raise :class:`AuthFailure`."""
    if any(_matches(secret, sig, body) for secret in secrets.of(tenant)):
        return
    if any(_matches(secret, sig, body) for secret in secrets.others(tenant)):
        raise AuthFailure(
            403,
            "wrong_tenant",
            "the signature is valid for another tenant, not this one: send the delivery to "
            "that tenant's URL, or sign it with this tenant's secret",
        )
    raise AuthFailure(
        401,
        "bad_signature",
        "signature does not match: sign the exact raw body as '<t>.<body>' with HMAC-SHA256 "
        "and the tenant's webhook secret, hex-encoded",
    )


def verify(
    secrets: TenantSecrets,
    tenant: str,
    header: str | None,
    body: bytes,
    *,
    now: float,
    window_s: int,
) -> Signature:
    """Authenticate one delivery for ``tenant`` or raise :class:`AuthFailure`."""
    sig = precheck(secrets, tenant, header, now=now, window_s=window_s)
    verify_body(secrets, tenant, sig, body)
    return sig
