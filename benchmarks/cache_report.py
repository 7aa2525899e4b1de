"""The cache benchmark's JSON report: per shape, per strategy usage, cost, waste and facts.

One object per session shape (:func:`shape_report`): ``calls``, ``wakes``, ``sessions``,
``source`` (the conversation it was built from); ``strategies`` (``wakeful`` is the
production path, then the baselines); ``cheapest_keeping_facts`` (the cheapest baseline
whose last request still holds every load-bearing fact); ``checks`` (what Wakeful should
achieve, each ``met`` with its ``value`` and ``bound``; ``met`` is null when a check does not
apply); ``floor`` (the cheapest any strategy could be that shows every token of the session
once: each token processed once at the base input price, plus the same output);
``limit`` (for Wakeful's windows); ``variants`` (what-if versions of Wakeful, if run);
``diagnosis`` (where Wakeful's cache missed although the tokens were not new).

Per strategy: ``cost_usd`` (all calls, maintenance included) and ``cost_vs_full_history``;
the turns' ``input_tokens`` (uncached), ``cache_read_tokens``, ``cache_write_tokens``,
``output_tokens``, ``cache_hit_ratio`` (read / all input of the turns' calls),
``mean_window_tokens``; ``written_never_read_tokens`` and ``written_never_read_share`` (of
every cache write of the strategy, maintenance calls included; see
:mod:`benchmarks.cache_reads`); ``load_bearing_kept`` (every planted decision's text is,
verbatim, in the request of the last turn; ``load_bearing_missing`` lists the ones that are
not, ``load_bearing_in_final_request`` the ones that are) and ``load_bearing_held_share``
(per decision, the share of the calls after it was stated whose request held it);
``question_evidence_in_window``: of the calls that answer a question about an earlier
session, the share whose request held every evidence turn's text (null without questions):
a strategy is cheap for nothing if it cannot see the answer. ``evidence_tokens`` and
``evidence_share_of_input``: the retrieved evidence the turns' requests carried, and its
share of their input tokens (Wakeful: its evidence segment and the wake's recorded evidence
sent again, by its own counter; a baseline: the retrieved documents); ``uncached_tokens``:
input tokens billed at the base price, maintenance calls included;
``cached_prefix_missed_calls`` and ``_tokens``: requests (maintenance calls included) that
read less from the cache than the longest prefix of them it held live when they were sent
(beyond the reach of their breakpoints), and the tokens they could have read;
``cached_prefix_unread_calls``: those of them that read nothing, sent uncached
(``checks.no_request_sent_uncached_past_a_cached_prefix``); ``settings``: a
provider-native baseline's parameters and what it did (:mod:`benchmarks.cache_native`).
``cheapest_keeping_facts`` is chosen among every baseline, the providers' own included.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

from benchmarks.cache_limit import Shortfall
from benchmarks.cache_reads import ReadTracker
from benchmarks.cache_session import AgentSession, Decision
from benchmarks.cache_strategies import request_tokens
from wakeful.compiler import CompiledWindow
from wakeful.providers.base import Usage
from wakeful.providers.pricing import price_for

__all__ = [
    "BASELINES",
    "CHECKS",
    "all_held",
    "held_decisions",
    "kept_decisions",
    "shape_report",
    "strategy_report",
]

BASELINES = (
    "full_history",
    "full_history_system",
    "sliding_window",
    "summarize_threshold",
    # the providers' own context management (benchmarks.cache_native)
    "anthropic_clear_tool_uses",
    "anthropic_compaction",
    "openai_compaction",
)
CHECKS = {
    "max_cost_vs_full_history": 1.0,
    "max_written_never_read_share": 0.15,
    "min_cache_hit_ratio": 0.85,
    "hit_ratio_from_calls": 21,  # the hit-ratio check applies to shapes with more calls
}


class TallyLike(Protocol):
    turns: list[Usage]
    maintenance: list[tuple[str, Usage]]
    cost: float
    maintenance_cost: float
    last_request: dict[str, Any]
    reads: ReadTracker
    held: dict[str, list[int]]  # decision id -> [calls after it was stated, calls holding it]
    evidence: list[int]  # [calls of question wakes, calls whose request held the answer]
    evidence_tokens: list[int]  # [evidence tokens, window tokens] over the turns' requests
    missed: list[int]  # [requests, tokens, uncached requests]: read less than was held
    details: dict[str, Any]  # the strategy's settings and what it did


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def kept_decisions(request: Mapping[str, Any], decisions: Sequence[Decision]) -> list[str]:
    """Ids of the decisions whose exact text is in one of the request's strings."""
    strings = list(_strings(request))
    return [d.id for d in decisions if any(d.text in text for text in strings)]


def all_held(request: Mapping[str, Any], texts: Sequence[str]) -> bool:
    """Whether every one of ``texts`` is, verbatim, in one of the request's strings."""
    strings = list(_strings(request))
    return all(any(t in s for s in strings) for t in texts)


def held_decisions(
    tally: TallyLike, request: Mapping[str, Any], decisions: Sequence[Decision], index: int
) -> None:
    """Count, for each decision stated before call ``index``, whether its request holds it."""
    after = [d for d in decisions if d.turn < index]
    if not after:
        return
    kept = set(kept_decisions(request, after))
    for d in after:
        counts = tally.held.setdefault(d.id, [0, 0])
        counts[0] += 1
        counts[1] += d.id in kept


def _ratio(a: float, b: float) -> float:
    return round(a / b, 4) if b else 0.0


def strategy_report(
    tally: TallyLike, decisions: Sequence[Decision], *, full_history_cost: float = 0.0
) -> dict[str, Any]:
    uncached = sum(u.input_tokens for u in tally.turns)
    read = sum(u.cache_read_input_tokens for u in tally.turns)
    written = sum(u.cache_creation_input_tokens for u in tally.turns)
    total = uncached + read + written
    kept = kept_decisions(tally.last_request, decisions)
    return {
        "cost_usd": round(tally.cost, 4),
        "cost_vs_full_history": _ratio(tally.cost, full_history_cost),
        "input_tokens": uncached,
        "cache_read_tokens": read,
        "cache_write_tokens": written,
        "output_tokens": sum(u.output_tokens for u in tally.turns),
        "cache_hit_ratio": round(read / total, 4) if total else 0.0,
        "mean_window_tokens": round(total / len(tally.turns)) if tally.turns else 0,
        "written_never_read_tokens": tally.reads.never_read_tokens,
        "written_never_read_share": round(tally.reads.never_read_share, 4),
        "load_bearing_kept": len(kept) == len(decisions),
        "load_bearing_in_final_request": kept,
        "load_bearing_missing": [d.id for d in decisions if d.id not in kept],
        "load_bearing_held_share": {
            d.id: _ratio(*reversed(tally.held[d.id])) if d.id in tally.held else None
            for d in decisions
        },
        "question_evidence_in_window": (
            _ratio(tally.evidence[1], tally.evidence[0]) if tally.evidence[0] else None
        ),
        "evidence_tokens": tally.evidence_tokens[0],
        "evidence_share_of_input": _ratio(*tally.evidence_tokens),
        "uncached_tokens": uncached + sum(u.input_tokens for _, u in tally.maintenance),
        "cached_prefix_missed_calls": tally.missed[0],
        "cached_prefix_missed_tokens": tally.missed[1],
        "cached_prefix_unread_calls": tally.missed[2],
        "maintenance_calls": len(tally.maintenance),
        "maintenance_cost_usd": round(tally.maintenance_cost, 4),
        **({"settings": tally.details} if tally.details else {}),
    }


def _floor(session: AgentSession, tallies: Mapping[str, TallyLike]) -> float:
    """Every token of the session (the full history's last request holds each once) at
    the base input price, plus the turns' output: no strategy that shows the agent
    everything once can cost less."""
    price = price_for("anthropic", session.model)
    assert price is not None
    content = request_tokens(tallies["full_history"].last_request)
    output = sum(u.output_tokens for u in tallies["full_history"].turns)
    return (content * price.input + output * price.output) / 1_000_000


def _check(met: bool | None, value: float, bound: float | None) -> dict[str, Any]:
    return {
        "met": met,
        "value": round(value, 4),
        "bound": round(bound, 4) if bound is not None else None,
    }


def _checks(
    session: AgentSession,
    tallies: Mapping[str, TallyLike],
    w: Mapping[str, Any],
    cheapest: float | None,
) -> dict[str, Any]:
    cost = tallies["wakeful"].cost
    full = tallies["full_history"].cost
    share = tallies["wakeful"].reads.never_read_share
    hit = w["cache_hit_ratio"]
    applies = len(session.turns) >= CHECKS["hit_ratio_from_calls"]
    unread = tallies["wakeful"].missed[2]
    return {
        "cost_le_cheapest_keeping_facts": _check(
            cost <= cheapest if cheapest is not None else None, cost, cheapest
        ),
        "cost_le_full_history": _check(
            cost <= CHECKS["max_cost_vs_full_history"] * full, cost, full
        ),
        "written_never_read_share_le_0_15": _check(
            share <= CHECKS["max_written_never_read_share"],
            share,
            CHECKS["max_written_never_read_share"],
        ),
        "cache_hit_ratio_ge_0_85": _check(
            hit >= CHECKS["min_cache_hit_ratio"] if applies else None,
            hit,
            CHECKS["min_cache_hit_ratio"],
        ),
        "no_request_sent_uncached_past_a_cached_prefix": _check(unread == 0, unread, 0),
    }


def shape_report(
    session: AgentSession,
    tallies: Mapping[str, TallyLike],
    shortfalls: Mapping[str, Shortfall],
    *,
    windows: Sequence[CompiledWindow],
    variants: Mapping[str, str],
    extra: Mapping[str, Any],
) -> dict[str, Any]:
    """The report of one shape; ``extra`` adds what the shape was built from."""
    full_cost = tallies["full_history"].cost
    every = {
        name: strategy_report(t, session.decisions, full_history_cost=full_cost)
        for name, t in tallies.items()
    }
    strategies = {name: r for name, r in every.items() if name not in variants}
    keeping = [n for n in BASELINES if n in strategies and strategies[n]["load_bearing_kept"]]
    best = min(keeping, key=lambda n: tallies[n].cost, default=None)
    cheapest = tallies[best].cost if best is not None else None
    shortfall = shortfalls["wakeful"]
    floor = _floor(session, tallies)
    what_if = {
        name: {
            "what": description,
            **every[name],
            "limit_cache_hit_ratio": round(shortfalls[name].limit_ratio, 4),
        }
        for name, description in variants.items()
    }
    buckets: dict[str, int] = {}
    for window in windows:
        for bucket, tokens in window.tokens_by_bucket.items():
            buckets[bucket] = buckets.get(bucket, 0) + tokens
    return {
        **extra,
        "calls": len(session.turns),
        "wakes": len(session.wakes),
        "sessions": len({wk.session for wk in session.wakes}),
        "decisions": {d.id: d.turn for d in session.decisions},
        "consolidated_after_wake": next(
            (wk.number for wk in session.wakes if wk.consolidate_after), None
        ),
        "strategies": strategies,
        "cheapest_keeping_facts": (
            {"strategy": best, "cost_usd": round(cheapest, 4)} if cheapest is not None else None
        ),
        "checks": _checks(session, tallies, strategies["wakeful"], cheapest),
        "floor": {"cost_usd": round(floor, 4), "vs_full_history": _ratio(floor, full_cost)},
        "limit": {
            "cache_hit_ratio": round(shortfall.limit_ratio, 4),
            "prefix_cache_hit_ratio": round(shortfall.prefix_ratio, 4),
        },
        "variants": what_if,
        "diagnosis": {
            "wakeful_lost_to_layout": shortfall.causes(),
            "wakeful_mean_tokens_by_bucket": {
                k: round(v / max(len(windows), 1)) for k, v in sorted(buckets.items())
            },
        },
    }
