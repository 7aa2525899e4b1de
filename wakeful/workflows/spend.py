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
"""

from __future__ import annotations

from datetime import UTC, datetime, time

from wakeful.agents import AgentRuntime

__all__ = ["day_start", "has_day_cap", "spend_cap"]


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
