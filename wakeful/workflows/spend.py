"""Spend caps: whether an agent may send its next model call (pure; no clock, no I/O).

An agent may cap what it spends per wake (``max_usd_per_wake``) and per UTC day
(``max_usd_per_day``, ``max_tokens_per_day``). The wake cycle checks before every model call:
the wake's own spend is what its calls so far returned; the day's spend is what the agent's
recorded model calls of the day cost, which the compile activity reads from the substrate
(``CompileOut.spent_today_usd``/``_tokens``) — the workflow may learn it only through an
activity result, which its history then replays.

A cap is *reached* when the spend is at or over it, so a call that starts under the cap is
sent and may pass it by its own cost; the next one is not. A day's spend counts each call
at its wake's start (see ``TenantStore.spend_since``).

The caps are the parent's when it delegates: its children spend on its behalf. A capped
agent's delegations run one child at a time, each child under a ``SpendCeiling`` — what
the parent has left of its caps after its own calls and the children before it
(``spend_left``) — which the child's wake cycles check before each model call
(``ceiling_cap``) as they check their own caps. Every model call of the parent and its
children is then checked against what is really left at the moment it is sent, so, as for
one agent, at most one call crosses a cap; a delegation whose turn comes with nothing left
is not run, and its call's result says why (``ceiling_spent``).
"""

from __future__ import annotations

from datetime import UTC, datetime, time

from wakeful.agents import AgentRuntime
from wakeful.contracts import SpendCeiling

__all__ = [
    "ceiling_cap",
    "ceiling_spent",
    "day_start",
    "has_cap",
    "has_day_cap",
    "spend_cap",
    "spend_left",
]


def has_cap(rt: AgentRuntime) -> bool:
    """Whether the agent has any spend cap (its delegations are then run within it)."""
    return rt.max_usd_per_wake is not None or has_day_cap(rt)


def has_day_cap(rt: AgentRuntime) -> bool:
    """Whether the compile activity must read the day's spend for this agent."""
    return rt.max_usd_per_day is not None or rt.max_tokens_per_day is not None


def day_start(now: datetime) -> datetime:
    """The start of ``now``'s UTC day (a naive time is taken as UTC)."""
    utc = now.astimezone(UTC) if now.tzinfo is not None else now.replace(tzinfo=UTC)
    return datetime.combine(utc.date(), time(), tzinfo=UTC)


def spend_cap(
    rt: AgentRuntime,
    *,
    wake_usd: float,
    today_usd: float | None,
    today_tokens: int | None,
    now: datetime,
) -> str | None:
    """Why the next model call may not be sent (one line), or None when no cap is reached.

    ``today_*`` are None when the day's spend was not read (an agent without a day cap, or
    a compile from before caps existed): then only the wake's cap is checked.
    """
    cap = rt.max_usd_per_wake
    if cap is not None and wake_usd >= cap:
        return (
            f"spend cap: this wake spent ${wake_usd:.4f} of max_usd_per_wake ${cap:g};"
            " the next model call was not sent"
        )
    day = f"today (UTC {day_start(now):%Y-%m-%d})"
    again = "the agent spends again after midnight UTC"
    cap = rt.max_usd_per_day
    if cap is not None and today_usd is not None and today_usd >= cap:
        return (
            f"spend cap: the agent spent ${today_usd:.4f} {day} of max_usd_per_day ${cap:g};"
            f" {again}"
        )
    tokens = rt.max_tokens_per_day
    if tokens is not None and today_tokens is not None and today_tokens >= tokens:
        return (
            f"spend cap: the agent used {today_tokens:,} tokens {day} of max_tokens_per_day"
            f" {tokens:,}; {again}"
        )
    return None


def spend_left(
    rt: AgentRuntime, *, wake_usd: float, today_usd: float | None, today_tokens: int | None
) -> SpendCeiling:
    """What the agent has left of its caps, given what its wake and its day have spent
    (``today_*`` None: not read, that cap is not counted)."""
    usd: float | None = None
    usd_cap = ""
    if rt.max_usd_per_wake is not None:
        usd, usd_cap = rt.max_usd_per_wake - wake_usd, "max_usd_per_wake"
    if rt.max_usd_per_day is not None and today_usd is not None:
        day = rt.max_usd_per_day - today_usd
        if usd is None or day < usd:
            usd, usd_cap = day, "max_usd_per_day"
    tokens = None
    if rt.max_tokens_per_day is not None and today_tokens is not None:
        tokens = rt.max_tokens_per_day - today_tokens
    return SpendCeiling(usd=usd, usd_cap=usd_cap, tokens=tokens)


def ceiling_spent(left: SpendCeiling) -> str | None:
    """Why a delegation may not start (one line, the parent's model reads it), or None
    when something is left under every capped kind of spend."""
    if left.usd is not None and left.usd <= 0:
        return (
            f"spend cap: nothing is left of the agent's {left.usd_cap} for this delegation;"
            " the child was not started"
        )
    if left.tokens is not None and left.tokens <= 0:
        return (
            "spend cap: nothing is left of the agent's max_tokens_per_day for this"
            " delegation; the child was not started"
        )
    return None


def ceiling_cap(ceiling: SpendCeiling, *, usd: float, tokens: int) -> str | None:
    """Why a child's next model call may not be sent: it spent (``usd``, ``tokens``: this
    wake's; ``ceiling``: what was left when the wake began) what its parent had left."""
    if ceiling.usd is not None and usd >= ceiling.usd:
        return (
            f"spend cap: this child spent ${usd:.4f} of the ${max(ceiling.usd, 0):.4f} left"
            f" of its parent's {ceiling.usd_cap}; the next model call was not sent"
        )
    if ceiling.tokens is not None and tokens >= ceiling.tokens:
        return (
            f"spend cap: this child used {tokens:,} tokens of the {max(ceiling.tokens, 0):,}"
            " left of its parent's max_tokens_per_day; the next model call was not sent"
        )
    return None
