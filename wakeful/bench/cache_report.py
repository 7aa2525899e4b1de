"""The cache benchmark's JSON report: per-strategy usage and cost, the limit, the targets.

Top level: ``turns``; ``strategies`` (``wakeful`` is the production path, then the three
baselines); ``limit`` (for Wakeful's windows); ``targets`` (each with value, target and
met); ``floor`` (the cheapest any strategy could be that shows every token of the session
once: each token processed once at the base input price, plus the same output);
``variants`` (what-if versions of Wakeful, each with its own limit and ratios);
``diagnosis`` (where Wakeful's cache missed although the tokens were not new); ``session``.

Per strategy: ``cost_usd`` (all calls, maintenance included), the turns' ``input_tokens``
(uncached), ``cache_read_tokens``, ``cache_write_tokens``, ``output_tokens``,
``cache_hit_ratio`` (read / all input of the turns' calls), ``mean_window_tokens``, and
``load_bearing_kept``: whether every planted decision's text is, verbatim, in the request
of the last turn (``load_bearing_missing`` lists the ones that are not).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from wakeful.bench.cache_limit import Shortfall
from wakeful.bench.cache_session import AgentSession, Decision
from wakeful.bench.cache_strategies import request_tokens
from wakeful.compiler import CompiledWindow
from wakeful.providers.base import Usage
from wakeful.providers.pricing import PRICE_TABLE_VERSION, price_for

__all__ = ["kept_decisions", "report", "strategy_report"]

TARGETS = {
    "cost_vs_full_history": 0.10,
    "cost_vs_sliding_window": 0.50,
    "hit_ratio_vs_limit": 0.90,
}


class TallyLike(Protocol):
    turns: list[Usage]
    maintenance: list[tuple[str, Usage]]
    cost: float
    maintenance_cost: float
    last_request: dict[str, Any]


def kept_decisions(request: Mapping[str, Any], decisions: Sequence[Decision]) -> list[str]:
    """Ids of the decisions whose exact text is in the request (as JSON-escaped text)."""
    body = json.dumps(request, ensure_ascii=False)
    return [d.id for d in decisions if json.dumps(d.text, ensure_ascii=False)[1:-1] in body]


def strategy_report(tally: TallyLike, decisions: Sequence[Decision]) -> dict[str, Any]:
    uncached = sum(u.input_tokens for u in tally.turns)
    read = sum(u.cache_read_input_tokens for u in tally.turns)
    written = sum(u.cache_creation_input_tokens for u in tally.turns)
    total = uncached + read + written
    kept = kept_decisions(tally.last_request, decisions)
    return {
        "cost_usd": round(tally.cost, 4),
        "input_tokens": uncached,
        "cache_read_tokens": read,
        "cache_write_tokens": written,
        "output_tokens": sum(u.output_tokens for u in tally.turns),
        "cache_hit_ratio": round(read / total, 4) if total else 0.0,
        "mean_window_tokens": round(total / len(tally.turns)) if tally.turns else 0,
        "load_bearing_kept": len(kept) == len(decisions),
        "load_bearing_missing": [d.id for d in decisions if d.id not in kept],
        "maintenance_calls": len(tally.maintenance),
        "maintenance_cost_usd": round(tally.maintenance_cost, 4),
    }


def _ratio(a: float, b: float) -> float:
    return round(a / b, 4) if b else 0.0


def _vs(w: Mapping[str, Any], baselines: Mapping[str, Any], limit: float) -> dict[str, float]:
    return {
        "cost_vs_full_history": _ratio(w["cost_usd"], baselines["full_history"]["cost_usd"]),
        "cost_vs_sliding_window": _ratio(w["cost_usd"], baselines["sliding_window"]["cost_usd"]),
        "hit_ratio_vs_limit": _ratio(w["cache_hit_ratio"], limit),
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


def report(
    session: AgentSession,
    tallies: Mapping[str, TallyLike],
    shortfalls: Mapping[str, Shortfall],
    *,
    settings: dict[str, Any],
    windows: Sequence[CompiledWindow],
    variants: Mapping[str, str],
) -> dict[str, Any]:
    every = {name: strategy_report(t, session.decisions) for name, t in tallies.items()}
    strategies = {name: r for name, r in every.items() if name not in variants}
    w = strategies["wakeful"]
    shortfall = shortfalls["wakeful"]
    limit = round(shortfall.limit_ratio, 4)
    checks = _vs(w, strategies, limit)
    targets: dict[str, Any] = {
        key: {
            "value": value,
            "target": ("<= " if key.startswith("cost") else ">= ") + str(TARGETS[key]),
            "met": value <= TARGETS[key] if key.startswith("cost") else value >= TARGETS[key],
        }
        for key, value in checks.items()
    }
    targets["load_bearing_kept"] = {"value": w["load_bearing_kept"], "met": w["load_bearing_kept"]}
    floor = _floor(session, tallies)
    what_if = {}
    for name, description in variants.items():
        own = round(shortfalls[name].limit_ratio, 4)
        what_if[name] = {
            "what": description,
            **every[name],
            "limit_cache_hit_ratio": own,
            **_vs(every[name], strategies, own),
        }
    buckets: dict[str, int] = {}
    for window in windows:
        for bucket, tokens in window.tokens_by_bucket.items():
            buckets[bucket] = buckets.get(bucket, 0) + tokens
    return {
        "turns": len(session.turns),
        "strategies": strategies,
        "limit": {
            "cache_hit_ratio": limit,
            "prefix_cache_hit_ratio": round(shortfall.prefix_ratio, 4),
        },
        "targets": targets,
        "floor": {
            "cost_usd": round(floor, 4),
            "vs_full_history": _ratio(floor, strategies["full_history"]["cost_usd"]),
        },
        "variants": what_if,
        "diagnosis": {
            "wakeful_lost_to_layout": shortfall.causes(),
            "wakeful_mean_tokens_by_bucket": {
                k: round(v / max(len(windows), 1)) for k, v in sorted(buckets.items())
            },
        },
        "session": {
            "model": session.model,
            "price_table": PRICE_TABLE_VERSION,
            "wakes": len(session.wakes),
            "sessions": len({wk.session for wk in session.wakes}),
            "decisions": {d.id: d.turn for d in session.decisions},
            "consolidated_after_wake": next(
                (wk.number for wk in session.wakes if wk.consolidate_after), None
            ),
            **settings,
        },
    }
