"""How the provider tests check the errors a provider maps: a scripted simulator error and
the ProviderError it must become."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, NamedTuple

import pytest

from wakeful.errors import ProviderError


class ErrorCase(NamedTuple):
    """The simulator's error ``step``, and the ProviderError's status, retryability and
    retry-after it must map to."""

    step: dict[str, Any]
    status: int
    retryable: bool
    retry_after: float | None


def error_cases(*cases: ErrorCase) -> list[Any]:
    """``cases`` as pytest parameters, each named by the status sent and the one mapped."""
    return [pytest.param(c, id=f"{c.step['status']}-to-{c.status}") for c in cases]


async def maps_to(call: Awaitable[Any], case: ErrorCase) -> ProviderError:
    """Await ``call``: it must raise the ProviderError ``case`` names (returned)."""
    with pytest.raises(ProviderError) as err:
        await call
    assert (err.value.status, err.value.retryable, err.value.retry_after) == (
        case.status,
        case.retryable,
        case.retry_after,
    )
    return err.value


# What every provider maps the same way: a timeout and a conflict are worth retrying.
TIMEOUT_AND_CONFLICT = (
    ErrorCase({"status": 408}, 408, True, None),
    ErrorCase({"status": 409}, 409, True, None),
)
