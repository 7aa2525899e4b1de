"""``wakeful bench cache``: what prompt caching earns each way of building windows.

One generated agent session (:mod:`wakeful.bench.cache_session`) is replayed call by call
into an in-memory substrate (:mod:`wakeful.bench.cache_substrate`; Postgres is not needed
to measure caching, and the snapshot code is the production one). At every model call,
four strategies build their request from the same events
(:mod:`wakeful.bench.cache_strategies`) and send it to the provider simulator, which applies
Anthropic's caching rules on a shared manual clock that follows the session's timeline
(so idle gaps expire caches). Wakeful's requests go through the real
:class:`~wakeful.providers.anthropic.AnthropicProvider` (official SDK, HTTP to a loopback
:class:`~wakeful.providers.simulator.SimulatorServer`); the baselines call the same
simulator in-process, which applies the same rules without the HTTP round trip. The model's
replies are scripted from the session, so output tokens are the same for every strategy.

Costs use :func:`wakeful.providers.pricing.cost_usd` and include maintenance calls — the
baseline's compactions and Wakeful's consolidation are model calls too. Token fields and
``cache_hit_ratio`` (read / all input) cover the turns' calls. ``limit`` is the physical
limit for Wakeful's own windows (:mod:`wakeful.bench.cache_limit`), and ``diagnosis`` names
what made Wakeful's cache miss where it could have hit.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anthropic

from wakeful.bench.cache_limit import Shortfall, call_limit
from wakeful.bench.cache_report import report
from wakeful.bench.cache_session import AgentSession, Turn, generate_session
from wakeful.bench.cache_strategies import (
    MAX_TOKENS,
    CallContext,
    FullHistory,
    SlidingWindow,
    Strategy,
    SummarizeThreshold,
)
from wakeful.bench.cache_substrate import EPOCH, MemorySubstrate
from wakeful.bench.cache_timeline import Consolidation, timeline
from wakeful.bench.cache_variants import variants as variants_of
from wakeful.bench.cache_wakeful import Wakeful
from wakeful.compiler import Policy
from wakeful.providers.anthropic import AnthropicProvider, usage_from_anthropic
from wakeful.providers.base import Usage
from wakeful.providers.pricing import cost_usd
from wakeful.providers.simulator import ManualClock, Script, SimulatorServer, Step
from wakeful.providers.simulator.script import ScriptedCall
from wakeful.tokenizers import BpeCounter

__all__ = ["Tally", "bench_policy", "run"]

CONSOLIDATION_SYSTEM = (
    "You consolidate an agent's history. Rewrite the events below as one line per step; "
    "keep every DECISION line verbatim."
)


def bench_policy() -> Policy:
    """The compile policy the benchmark runs Wakeful with."""
    return Policy.default()


@dataclass
class Tally:
    """Usage and cost of one strategy."""

    turns: list[Usage] = field(default_factory=list)
    maintenance: list[tuple[str, Usage]] = field(default_factory=list)
    cost: float = 0.0
    maintenance_cost: float = 0.0
    last_request: dict[str, Any] = field(default_factory=dict)


def _step(turn: Turn) -> Step:
    return Step(
        text=turn.text,
        tool_calls=[ScriptedCall(name=u.name, input=u.input) for u in turn.tools],
    )


class Runner:
    """Sends each strategy's requests to the simulator under that strategy's own key."""

    def __init__(self, server: SimulatorServer, session: AgentSession) -> None:
        self.server = server
        self.session = session
        self.provider = AnthropicProvider("bench-wakeful", base_url=server.base_url, timeout=60)

    async def send(self, name: str, request: dict[str, Any], step: Step) -> Usage:
        sim = self.server.simulator
        sim.set_script(Script(steps=[step]), scope=f"bench-{name}")
        if name == "wakeful":
            return (await self.provider.complete(request)).usage
        status, body, _ = sim.anthropic_messages({"x-api-key": f"bench-{name}"}, request)
        if status != 200:
            raise RuntimeError(f"simulator refused the {name} request ({status}): {body}")
        return usage_from_anthropic(anthropic.types.Usage.model_validate(body["usage"]))


async def replay(
    session: AgentSession,
    strategies: list[Strategy],
    say: Callable[[str], None],
) -> tuple[dict[str, Tally], dict[str, Shortfall]]:
    """Replay the session through every strategy; return tallies, and the shortfall of
    every Wakeful strategy's windows against the limit."""
    sub = MemorySubstrate()
    clock = ManualClock(start=EPOCH.timestamp())
    tallies = {s.name: Tally() for s in strategies}
    compiled = [s for s in strategies if isinstance(s, Wakeful)]
    shortfalls = {s.name: Shortfall() for s in compiled}
    previous_at: float | None = None
    with SimulatorServer(clock=clock) as server:
        runner = Runner(server, session)
        try:
            for item in timeline(session, sub):
                if isinstance(item, Consolidation):
                    clock.advance(EPOCH.timestamp() + item.at - clock())
                    request = {
                        "model": session.model,
                        "max_tokens": MAX_TOKENS,
                        "system": CONSOLIDATION_SYSTEM,
                        "messages": [{"role": "user", "content": item.read}],
                    }
                    for w in compiled:  # every compiled strategy reads these summaries
                        usage = await runner.send(w.name, request, Step(text=item.written))
                        _charge(tallies[w.name], session, "consolidation", usage)
                    say(f"consolidated history at {item.at:.0f} s")
                    continue
                turn = item.turn
                clock.advance(EPOCH.timestamp() + turn.at - clock())
                for strategy in strategies:
                    await _call(runner, strategy, item, tallies[strategy.name], session)
                gap = turn.at - previous_at if previous_at is not None else 0.0
                for w in compiled:
                    prev = w.windows[-2].ledger if len(w.windows) > 1 else None
                    shortfalls[w.name].add(call_limit(prev, w.windows[-1].ledger, gap, w.policy))
                previous_at = turn.at
                if (turn.index + 1) % 50 == 0:
                    say(f"turn {turn.index + 1}/{len(session.turns)}")
        finally:
            await runner.provider.aclose()
    return tallies, shortfalls


def _charge(tally: Tally, session: AgentSession, kind: str, usage: Usage) -> None:
    cost = cost_usd("anthropic", session.model, usage)
    tally.cost += cost
    if kind == "turn":
        tally.turns.append(usage)
    else:
        tally.maintenance.append((kind, usage))
        tally.maintenance_cost += cost


async def _call(
    runner: Runner, strategy: Strategy, ctx: CallContext, tally: Tally, session: AgentSession
) -> None:
    plan = strategy.plan(ctx)
    for extra in plan.maintenance:
        usage = await runner.send(strategy.name, extra.request, Step(text=extra.reply))
        _charge(tally, session, extra.kind, usage)
    usage = await runner.send(strategy.name, plan.request, _step(ctx.turn))
    _charge(tally, session, "turn", usage)
    tally.last_request = plan.request


def run(
    turns: int = 200,
    *,
    seed: int = 11,
    window_turns: int = 30,
    threshold: int = 60_000,
    variants: bool = True,
    policy: Policy | None = None,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the benchmark and return its report (see :mod:`wakeful.bench.cache_report`)."""
    say = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    started = time.perf_counter()
    session = generate_session(turns, seed)
    say(f"session: {turns} turns in {len(session.wakes)} wakes, seed {seed}")
    chosen = policy or bench_policy()
    counter = BpeCounter()
    wakeful = Wakeful(session, chosen, counter)
    strategies: list[Strategy] = [
        wakeful,
        FullHistory(),
        SlidingWindow(window_turns),
        SummarizeThreshold(threshold),
    ]
    what: dict[str, str] = {}
    for variant in variants_of(chosen) if variants else ():
        options = dict(variant.options)
        strategies.append(
            Wakeful(
                session,
                options.pop("policy", chosen),
                counter,
                name=f"wakeful_{variant.name}",
                **options,
            )
        )
        what[f"wakeful_{variant.name}"] = variant.what
    tallies, shortfalls = asyncio.run(replay(session, strategies, say))
    out = report(
        session,
        tallies,
        shortfalls,
        settings={
            "seed": seed,
            "policy": chosen.name,
            "policy_fingerprint": chosen.fingerprint,
            "sliding_window_turns": window_turns,
            "summarize_threshold_tokens": threshold,
        },
        windows=wakeful.windows,
        variants=what,
    )
    out["seconds"] = round(time.perf_counter() - started, 1)
    say(f"done in {out['seconds']} s")
    return out


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--no-variants", action="store_true", help="skip the what-if variants")
    parser.add_argument("--json", action="store_true", help="print the JSON report to stdout")
    args = parser.parse_args(argv)
    result = run(args.turns, seed=args.seed, variants=not args.no_variants)
    print(json.dumps(result, indent=2, sort_keys=True) if args.json else result)


if __name__ == "__main__":
    main()
