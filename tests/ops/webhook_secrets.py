"""The webhook secrets the operations tests sign with: the default tenant's and ``acme``'s."""

from __future__ import annotations

SECRET = "whsec-default-0123456789"
OTHER_TENANT = "acme"
OTHER_SECRET = "whsec-acme-9876543210"
