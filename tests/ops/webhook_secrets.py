"""The credentials the operations tests use: the webhook secrets of the default tenant and
``acme``, and the approvers' tokens (a credential of their own, never a webhook secret)."""

from __future__ import annotations

SECRET = "whsec-default-0123456789"
OTHER_TENANT = "acme"
OTHER_SECRET = "whsec-acme-9876543210"

APPROVER = "ops"
APPROVER_TOKEN = "approve-ops-" + "0123456789abcdef" * 3
OTHER_APPROVER = "acme-ops"
OTHER_APPROVER_TOKEN = "approve-acme-" + "fedcba9876543210" * 3
