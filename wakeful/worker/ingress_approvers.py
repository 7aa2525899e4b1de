"""Who may decide a waiting tool call over HTTP: approvers, each with a bearer token.

An approval is a credential of its own, not the webhook secret: whoever sends a tenant's
webhooks must not thereby decide its agents' tool calls. Each approver of a tenant has a
name and a token (``WAKEFUL_APPROVAL_TOKENS`` for the default tenant,
``WAKEFUL_APPROVAL_TENANT_TOKENS`` for the others); a request carries it as::

    Authorization: Bearer <token>

and the decision is recorded as taken by the token's approver, never by a name the body
gives. Tokens are compared in constant time, as digests (so their lengths do not show).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Mapping

from pydantic import SecretStr

from wakeful.names import check_tenant
from wakeful.worker.ingress_auth import SIGNATURE_HEADER, AuthFailure
from wakeful.worker.settings import Settings

__all__ = ["AUTHORIZATION_HEADER", "Approvers"]

AUTHORIZATION_HEADER = "Authorization"
_MAX_HEADER = 1024
_CONFIGURE = "WAKEFUL_APPROVAL_TOKENS or WAKEFUL_APPROVAL_TENANT_TOKENS"


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


class Approvers:
    """The approvers of each tenant, by the digest of their token."""

    def __init__(self, by_tenant: Mapping[str, Iterable[tuple[str, SecretStr]]]) -> None:
        """``by_tenant``: each tenant's approvers as (name, token) pairs; a name may have
        several tokens (while one is replaced)."""
        for tenant in by_tenant:
            check_tenant(tenant, "the approval tokens")
        self._by_tenant = {
            tenant: [(name, _digest(t.get_secret_value())) for name, t in sorted(tokens)]
            for tenant, tokens in by_tenant.items()
        }

    @classmethod
    def from_settings(cls, settings: Settings) -> Approvers:
        """The default tenant's from ``approval_tokens``, the others' from
        ``approval_tenant_tokens`` (a default tenant named there has both)."""
        table: dict[str, list[tuple[str, SecretStr]]] = {}
        if settings.approval_tokens:
            table[settings.tenant] = list(settings.approval_tokens.items())
        for tenant, tokens in sorted(settings.approval_tenant_tokens.items()):
            table.setdefault(tenant, []).extend(tokens.items())
        return cls(table)

    @property
    def tenants(self) -> list[str]:
        return sorted(t for t, approvers in self._by_tenant.items() if approvers)

    def _match(self, tenant: str, digest: bytes) -> str | None:
        found = None
        for name, expected in self._by_tenant.get(tenant, []):
            if hmac.compare_digest(expected, digest) and found is None:
                found = name  # no early exit: every token is compared
        return found

    def identify(self, tenant: str, headers: Mapping[str, str]) -> str:
        """The approver whose token the request carries, or :class:`AuthFailure`: 401 for
        no, a malformed or an unknown token (a webhook signature is not one), 403 for a
        token of another tenant's approver."""
        header = headers.get(AUTHORIZATION_HEADER)
        if not header:
            signed = headers.get(SIGNATURE_HEADER) or headers.get("webhook-signature")
            raise AuthFailure(
                401,
                "webhook_signature" if signed else "missing_credential",
                ("a webhook signature does not decide approvals: " if signed else "")
                + "send 'Authorization: Bearer <token>' with an approver's token ("
                + _CONFIGURE
                + ")",
            )
        scheme, _, token = header.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token or len(header) > _MAX_HEADER:
            raise AuthFailure(
                401,
                "malformed_credential",
                "the Authorization header must be 'Bearer <token>' with an approver's token",
            )
        if not self._by_tenant.get(tenant):
            raise AuthFailure(
                401,
                "no_approvers",
                f"approvals for this tenant are refused: no approver tokens are configured "
                f"for it ({_CONFIGURE})",
            )
        digest = _digest(token)
        approver = self._match(tenant, digest)
        if approver is not None:
            return approver
        if any(self._match(other, digest) for other in sorted(self._by_tenant) if other != tenant):
            raise AuthFailure(
                403,
                "wrong_tenant",
                "the token is an approver's of another tenant, not this one: use that "
                "tenant's URL, or a token of this tenant's approver",
            )
        raise AuthFailure(
            401, "bad_credential", "the bearer token is not an approver's token for this tenant"
        )
