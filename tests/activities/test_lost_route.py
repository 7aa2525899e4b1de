"""Which route a model call's previous attempt lost: the one its last heartbeat named, when
that attempt ended while waiting for it (not when the route replied or failed first), and
only from the attempt the failover policy fails over from."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from wakeful.activities.model import lost_route

ROUTE = "anthropic/claude-sonnet-4-6"


def _lost(attempt: int, details: list[Any], after_attempts: int = 1) -> str | None:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, attempt=attempt, heartbeat_details=details)
    return env.run(lost_route, after_attempts)


def test_a_route_still_in_flight_when_the_attempt_ended_is_lost() -> None:
    assert _lost(2, [{"route": ROUTE}]) == ROUTE


@pytest.mark.parametrize("how", ["replied", "failed"])
def test_a_route_that_replied_or_failed_first_is_not(how: str) -> None:
    assert _lost(2, [{"route": ROUTE, "ended": how}]) is None


def test_not_before_the_attempt_the_policy_fails_over_from() -> None:
    assert _lost(2, [{"route": ROUTE}], after_attempts=2) is None
    assert _lost(3, [{"route": ROUTE}], after_attempts=2) == ROUTE


@pytest.mark.parametrize("details", [[], [{}], ["anthropic"], [{"route": 7}], [None]])
def test_nothing_is_lost_without_a_named_route(details: list[Any]) -> None:
    assert _lost(2, details) is None


def test_a_first_attempt_lost_nothing() -> None:
    assert _lost(1, [{"route": ROUTE}]) is None
