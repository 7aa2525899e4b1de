"""One realistic long agent session, generated deterministically, for the cache benchmark.

The session is data: what the user asked, what the model answered (text and tool calls),
what each tool returned, when each call happened, which documents retrieval found for each
wake, which decisions the agent must never lose, and when history is consolidated. Every
strategy in :mod:`benchmarks.cache_strategies` is compiled from these same events; the
model's replies are scripted from it, so output tokens are identical across strategies and
only the windows differ.

Shape (``turns`` = model calls; 200 by default):

* wakes of 2-8 calls; every call but the last of a wake uses one or two tools;
* tool outputs of varied size (log-normal, median ~450, ~60 to ~6,000 tokens: file reads, logs, test
  runs, metric dumps), ~9 % of them errors that the next call of the wake fixes;
* retrieval: 0-4 runbook/design documents per wake (often the same ones again);
* five load-bearing decisions planted in the first ~20 % of the session, three stated by
  the agent and two by the user;
* short gaps (seconds to a few minutes) between calls and wakes, and four idle gaps longer
  than the 5-minute cache TTL, the last one longer than an hour (a new session);
* a consolidation at the first wake boundary past the middle of the session.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from benchmarks.cache_text import (
    INSTRUCTIONS,
    TOOLS,
    Words,
    ask_text,
    assistant_text,
    document,
    tool_output,
)

__all__ = ["AgentSession", "Decision", "Doc", "ToolUse", "Turn", "Wake", "generate_session"]

MODEL = "claude-sonnet-4-6"
DECISIONS = (
    "Schema changes ship as expand/contract migrations; never drop a column in the release "
    "that stops writing it.",
    "Payments traffic stays pinned to the eu-west primary until the replica lag alarm has "
    "been green for 7 days.",
    "Never retry a POST to the ledger service without the idempotency key header.",
    "Feature flags for checkout default to off and are removed within two sprints.",
    "All customer-visible incident updates go through the status page, not the chat bot.",
)
DECISIONS_BY_USER = (False, True, False, True, False)
# (turn fraction, seconds) of idle gaps before a wake: all longer than the 5 m TTL, the
# last one longer than the 1 h TTL and the worker's session idle limit (a new session).
LONG_GAPS = ((0.18, 12 * 60.0), (0.42, 25 * 60.0), (0.63, 47 * 60.0), (0.84, 3 * 3600.0))


@dataclass(frozen=True)
class Decision:
    id: str
    text: str
    turn: int
    by_user: bool


@dataclass(frozen=True)
class ToolUse:
    id: str
    name: str
    input: dict[str, Any]
    output: str
    is_error: bool = False
    fixes: str | None = None  # the failed call this one resolves
    seconds: float = 2.0  # how long the tool ran


@dataclass(frozen=True)
class Turn:
    """One model call: when it was made and what the model answered."""

    index: int
    wake: int
    at: float
    latency: float
    text: str
    tools: tuple[ToolUse, ...]
    decision: Decision | None = None


@dataclass(frozen=True)
class Doc:
    id: str
    title: str
    text: str
    relevance: float


@dataclass(frozen=True)
class Wake:
    number: int
    session: int
    at: float
    ask: str
    docs: tuple[Doc, ...]
    turns: tuple[Turn, ...]
    decision: Decision | None = None  # stated by the user in the ask
    consolidate_after: bool = False

    @property
    def ended_at(self) -> float:
        last = self.turns[-1]
        return last.at + last.latency


@dataclass(frozen=True)
class AgentSession:
    model: str
    instructions: str
    tools: tuple[dict[str, Any], ...]
    wakes: tuple[Wake, ...]
    decisions: tuple[Decision, ...]
    seed: int

    @property
    def turns(self) -> tuple[Turn, ...]:
        return tuple(t for w in self.wakes for t in w.turns)


def _sizes(rnd: random.Random) -> int:
    """Tool output size in tokens: log-normal, median ~450, clamped to [60, 6000]."""
    return int(min(6000, max(60, math.exp(rnd.gauss(math.log(450), 0.9)))))


def _calls_per_wake(rnd: random.Random, remaining: int) -> int:
    n = rnd.choice((2, 3, 3, 4, 4, 5, 5, 6, 7, 8))
    return remaining if remaining - n < 2 else n


def _plan_decisions(turns: int) -> dict[int, int]:
    """Turn index -> decision number, all in the first ~20 % of the session."""
    spots: list[int] = []
    for f in (0.01, 0.04, 0.08, 0.13, 0.19):
        spots.append(max(round(turns * f), spots[-1] + 1 if spots else 1))
    return {spot: n for n, spot in enumerate(spots)}


def _fix_or_new(rnd: random.Random, words: Words, ident: str, pending: ToolUse | None) -> ToolUse:
    """The next tool use: the fix of a pending failure, or a fresh call (9 % fail)."""
    if pending is not None:
        return ToolUse(
            ident,
            pending.name,
            {**pending.input, "retry": True},
            tool_output(words, pending.name, _sizes(rnd), error=False),
            fixes=pending.id,
            seconds=rnd.uniform(1, 20),
        )
    name = rnd.choice([t["name"] for t in TOOLS])
    error = rnd.random() < 0.09
    return ToolUse(
        ident,
        name,
        {"target": words.path(), "query": words.phrase(3)},
        tool_output(words, name, 150 if error else _sizes(rnd), error=error),
        is_error=error,
        seconds=rnd.uniform(1, 20),
    )


def generate_session(turns: int = 200, seed: int = 11) -> AgentSession:
    """The session: ``turns`` model calls in wakes, deterministic for a seed."""
    if turns < 10:
        raise ValueError(f"turns must be at least 10 for a meaningful session, got {turns}")
    rnd = random.Random(seed)
    words = Words(rnd)
    corpus = [document(words, n, rnd.randint(250, 700)) for n in range(14)]
    planted = _plan_decisions(turns)
    gaps = [(max(1, round(turns * f)), s) for f, s in LONG_GAPS]
    decisions: list[Decision] = []
    wakes: list[Wake] = []
    now, index, session, call_ids = 0.0, 0, 1, 0
    consolidated = False
    while index < turns:
        n_calls = _calls_per_wake(rnd, turns - index)
        if wakes:
            long_gap = next((g for g in gaps if g[0] <= index), None)
            if long_gap is not None:
                gaps.remove(long_gap)
                now += long_gap[1]
                session += 1 if long_gap[1] > 3600 else 0
            else:
                now += rnd.uniform(20, 240)
        number = len(wakes) + 1
        user_decision = None
        due = [t for t in sorted(planted) if t <= index and DECISIONS_BY_USER[planted[t]]]
        if due:
            said = planted.pop(due[0])
            user_decision = Decision(f"D-{said + 1}", DECISIONS[said], index, True)
            decisions.append(user_decision)
        wake_turns: list[Turn] = []
        at = now + 0.5
        pending: ToolUse | None = None
        for k in range(n_calls):
            decision = None
            spot = planted.get(index)
            if spot is not None and not DECISIONS_BY_USER[spot]:
                del planted[index]
                decision = Decision(f"D-{spot + 1}", DECISIONS[spot], index, False)
                decisions.append(decision)
            uses: list[ToolUse] = []
            if k < n_calls - 1:
                for _ in range(2 if rnd.random() < 0.2 else 1):
                    call_ids += 1
                    use = _fix_or_new(rnd, words, f"toolu_{call_ids:04d}", pending)
                    pending = use if use.is_error else None
                    uses.append(use)
            text = assistant_text(words, rnd.randint(40, 260), decision, final=k == n_calls - 1)
            latency = 3 + len(text) / 400 + rnd.uniform(0, 4)
            wake_turns.append(Turn(index, number, at, latency, text, tuple(uses), decision))
            at += latency + max((u.seconds for u in uses), default=0.0) + 0.3
            index += 1
        docs = tuple(
            Doc(ident, title, text, round(rnd.uniform(0.3, 0.95), 2))
            for ident, title, text in rnd.sample(corpus, rnd.choice((0, 1, 2, 2, 3, 3, 4)))
        )
        consolidate = not consolidated and index >= turns // 2
        consolidated = consolidated or consolidate
        ask = ask_text(words, rnd.randint(25, 140), user_decision)
        wakes.append(
            Wake(number, session, now, ask, docs, tuple(wake_turns), user_decision, consolidate)
        )
        now = wakes[-1].ended_at
    ordered = tuple(sorted(decisions, key=lambda d: d.id))
    return AgentSession(MODEL, INSTRUCTIONS, TOOLS, tuple(wakes), ordered, seed)
