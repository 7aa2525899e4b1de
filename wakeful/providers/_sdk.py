"""Helpers shared by the SDK-backed providers (no SDK imports here)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

__all__ = ["RETRYABLE_STATUSES", "is_retryable_status", "retry_after_seconds", "split_body"]

RETRYABLE_STATUSES = frozenset({408, 409, 429})


def is_retryable_status(status: int) -> bool:
    """408/409/429 and every 5xx (Anthropic's 529 "overloaded" included) are transient."""
    return status in RETRYABLE_STATUSES or status >= 500


def split_body(create: Callable[..., Any], body: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments for an SDK ``create`` that send ``body`` byte-for-byte as given.

    Keys the installed SDK does not know as parameters travel in ``extra_body`` instead of
    raising ``TypeError``: the compiler's rendered body is the contract, not the SDK's
    signature of the day.
    """
    params = inspect.signature(create).parameters
    known = {k: v for k, v in body.items() if k in params and k != "extra_body"}
    extra = {k: v for k, v in body.items() if k not in known}
    if extra:
        known["extra_body"] = extra
    return known


def retry_after_seconds(
    headers: Mapping[str, str] | None, now: datetime | None = None
) -> float | None:
    """Parse ``retry-after-ms`` / ``retry-after`` (seconds or an HTTP date)."""
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(float(millis) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - (now or datetime.now(UTC))).total_seconds(), 0.0)
