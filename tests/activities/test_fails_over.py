"""Which provider failures send a model call to the agent's next route."""

from __future__ import annotations

import pytest

from wakeful.activities.model import fails_over
from wakeful.errors import ProviderError


@pytest.mark.parametrize(
    ("status", "retryable", "goes_on"),
    [
        (529, True, True),  # overloaded (Anthropic)
        (503, True, True),  # overloaded (OpenAI)
        (500, True, True),
        (408, True, True),  # the provider timed out
        (None, True, True),  # no reply at all: unreachable, or our timeout
        (429, True, False),  # a rate limit waits for its own provider
        (409, True, False),
        (400, False, False),  # the request's fault: no provider would take it
        (401, False, False),
    ],
)
def test_outages_fail_over_and_the_callers_own_faults_do_not(
    status: int | None, retryable: bool, goes_on: bool
) -> None:
    assert fails_over(ProviderError("x", status=status, retryable=retryable)) is goes_on
