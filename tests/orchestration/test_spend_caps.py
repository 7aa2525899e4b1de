"""Spend caps, the pure check: which cap stops the next model call, and the agent's fields."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from tests.orchestration.helpers import scout
from wakeful.agents import Agent, AgentRuntime
from wakeful.contracts import SpendCeiling
from wakeful.errors import UserError
from wakeful.workflows.spend import (
    ceiling_cap,
    ceiling_spent,
    day_start,
    has_cap,
    has_day_cap,
    spend_cap,
    spend_left,
)

NOW = datetime(2026, 3, 4, 23, 59, tzinfo=UTC)


def _rt(**caps: float | int | None) -> AgentRuntime:
    return AgentRuntime(tenant="t", name="a", provider="anthropic", model="m", **caps)  # type: ignore[arg-type]


def _check(
    rt: AgentRuntime, wake: float = 0.0, usd: float | None = None, tokens: int | None = None
) -> str | None:
    return spend_cap(rt, wake_usd=wake, today_usd=usd, today_tokens=tokens, now=NOW)


def test_no_caps_never_stop_a_call() -> None:
    rt = _rt()
    assert not has_day_cap(rt)
    assert _check(rt, wake=1e6, usd=1e6, tokens=10**12) is None


def test_the_wake_cap_stops_the_call_once_the_wake_spent_it() -> None:
    rt = _rt(max_usd_per_wake=0.05)
    assert not has_day_cap(rt)
    assert _check(rt, wake=0.0499) is None
    why = _check(rt, wake=0.05)
    assert why == (
        "spend cap: this wake spent $0.0500 of max_usd_per_wake $0.05;"
        " the next model call was not sent"
    )


def test_the_day_caps_stop_the_call_once_the_day_spent_them() -> None:
    rt = _rt(max_usd_per_day=0.01, max_tokens_per_day=5_000)
    assert has_day_cap(rt)
    assert _check(rt, usd=0.0099, tokens=4_999) is None
    assert _check(rt, usd=0.012, tokens=10) == (
        "spend cap: the agent spent $0.0120 today (UTC 2026-03-04) of max_usd_per_day $0.01;"
        " the agent spends again after midnight UTC"
    )
    assert _check(rt, usd=0.0, tokens=5_000) == (
        "spend cap: the agent used 5,000 tokens today (UTC 2026-03-04) of max_tokens_per_day"
        " 5,000; the agent spends again after midnight UTC"
    )
    # Not read (a compile from before caps, or the check after a tool round): not checked.
    assert _check(rt, wake=1.0) is None


def test_what_is_left_for_children_is_the_tightest_cap_less_the_spend() -> None:
    assert not has_cap(_rt())
    wake_and_day = _rt(max_usd_per_wake=0.05, max_usd_per_day=0.10, max_tokens_per_day=900)
    assert has_cap(wake_and_day) and has_cap(_rt(max_usd_per_wake=0.05))
    left = spend_left(wake_and_day, wake_usd=0.01, today_usd=0.08, today_tokens=400)
    assert left.usd == pytest.approx(0.02)
    assert (left.usd_cap, left.tokens) == ("max_usd_per_day", 500)
    left = spend_left(wake_and_day, wake_usd=0.04, today_usd=0.0, today_tokens=None)
    assert left.usd == pytest.approx(0.01)
    assert (left.usd_cap, left.tokens) == ("max_usd_per_wake", None)
    assert spend_left(_rt(), wake_usd=1.0, today_usd=1.0, today_tokens=1) == SpendCeiling()


def test_a_child_is_held_to_what_its_parent_had_left() -> None:
    left = SpendCeiling(usd=0.02, usd_cap="max_usd_per_day", tokens=500)
    assert ceiling_spent(left) is None
    assert ceiling_cap(left, usd=0.0199, tokens=499) is None
    assert ceiling_cap(left, usd=0.02, tokens=0) == (
        "spend cap: this child spent $0.0200 of the $0.0200 left of its parent's"
        " max_usd_per_day; the next model call was not sent"
    )
    assert ceiling_cap(left, usd=0.0, tokens=500) == (
        "spend cap: this child used 500 tokens of the 500 left of its parent's"
        " max_tokens_per_day; the next model call was not sent"
    )
    spent = left.less(0.03, 100)
    assert ceiling_spent(spent) == (
        "spend cap: nothing is left of the agent's max_usd_per_day for this delegation;"
        " the child was not started"
    )
    assert ceiling_spent(left.less(0.0, 500)) == (
        "spend cap: nothing is left of the agent's max_tokens_per_day for this delegation;"
        " the child was not started"
    )
    assert ceiling_spent(SpendCeiling()) is None  # nothing capped: nothing can run out


def test_the_day_is_the_utc_day() -> None:
    assert day_start(NOW) == datetime(2026, 3, 4, tzinfo=UTC)
    east = datetime(2026, 3, 5, 1, 30, tzinfo=timezone(timedelta(hours=3)))  # 22:30 UTC
    assert day_start(east) == datetime(2026, 3, 4, tzinfo=UTC)
    naive = datetime(2026, 3, 5, 12)  # noqa: DTZ001 - a naive time is taken as UTC
    assert day_start(naive) == datetime(2026, 3, 5, tzinfo=UTC)


def test_the_runtime_carries_the_caps(tmp_path: Path) -> None:
    agent = scout(
        tmp_path, tenant="t", max_usd_per_wake=0.5, max_usd_per_day=2, max_tokens_per_day=10**6
    )
    rt = agent.runtime()
    assert (rt.max_usd_per_wake, rt.max_usd_per_day, rt.max_tokens_per_day) == (0.5, 2, 10**6)
    assert agent.spec()["spend_caps"] == {
        "max_usd_per_wake": 0.5,
        "max_usd_per_day": 2,
        "max_tokens_per_day": 10**6,
    }
    # An agent without caps keeps the spec (and its hash) it had before caps existed.
    assert "spend_caps" not in scout(tmp_path, tenant="t").spec()


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        (
            "max_usd_per_day",
            0,
            "max_usd_per_day must be a number > 0 of dollars (or None: no cap) (got 0)",
        ),
        (
            "max_usd_per_wake",
            -1.0,
            "max_usd_per_wake must be a number > 0 of dollars (or None: no cap) (got -1.0)",
        ),
        ("max_usd_per_day", float("nan"), "max_usd_per_day must be a number > 0"),
        ("max_usd_per_day", "1", "max_usd_per_day must be a number > 0"),
        ("max_tokens_per_day", 0, "max_tokens_per_day must be an integer >= 1 (got 0)"),
        ("max_tokens_per_day", 1.5, "max_tokens_per_day must be an integer >= 1 (got 1.5)"),
    ],
)
def test_a_bad_cap_is_one_line_naming_it(field: str, value: object, expected: str) -> None:
    with pytest.raises(UserError) as err:
        Agent(name="a", instructions="x", **{field: value})  # type: ignore[arg-type]
    assert str(err.value).startswith(f"agent 'a': {expected}")
    assert "\n" not in str(err.value)
