"""``wakeful bench cache``: what prompt caching earns each way of building windows.

The bench replays many session shapes (:mod:`benchmarks.cache_shapes`): agent sessions
built from real LoCoMo dialogue (a short chat, a long single session, sessions with
handoffs, tool-heavy wakes, questions about earlier sessions, idle gaps past the cache TTL)
on the holdout split by default, and the generated synthetic session. Each shape is
replayed call by call into an in-memory substrate (:mod:`benchmarks.cache_substrate`;
Postgres is not needed to measure caching, and the snapshot code is the production one).
At every model call, every strategy builds its request from the same events
(:mod:`benchmarks.cache_strategies`) and sends it to the provider simulator, which
applies Anthropic's caching rules on a shared manual clock that follows the session's
timeline (so idle gaps expire caches). Wakeful's requests go through the real
:class:`~wakeful.providers.anthropic.AnthropicProvider` (official SDK, HTTP to a loopback
:class:`~wakeful.testing.simulator.SimulatorServer`); the baselines call the same
simulator in-process, which applies the same rules without the HTTP round trip. The model's
replies are scripted from the session, so output tokens are the same for every strategy.

Costs use :func:`wakeful.providers.pricing.cost_usd` and include maintenance calls — the
baseline's compactions and Wakeful's consolidation are model calls too. Token fields and
``cache_hit_ratio`` (read / all input) cover the turns' calls. Written-never-read tokens
(:mod:`benchmarks.cache_reads`) are computed from every request of a strategy, in order.
``limit`` is the physical limit for Wakeful's own windows (:mod:`benchmarks.cache_limit`),
and ``diagnosis`` names what made Wakeful's cache miss where it could have hit. The report's
fields are described in :mod:`benchmarks.cache_report`.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anthropic

from benchmarks.cache_limit import Shortfall, call_limit
from benchmarks.cache_locomo import DEFAULT_DATASET, SPLITS, load_split
from benchmarks.cache_native import AnthropicCompaction, ClearToolUses, ResponsesCompaction
from benchmarks.cache_reads import ReadTracker
from benchmarks.cache_report import all_held, held_decisions, shape_report
from benchmarks.cache_session import AgentSession, Turn
from benchmarks.cache_shapes import SHAPES, Shape, build_shape
from benchmarks.cache_strategies import (
    MAX_TOKENS,
    CallContext,
    FullHistory,
    FullHistorySystem,
    SlidingWindow,
    Strategy,
    SummarizeThreshold,
    document_tokens,
    request_tokens,
)
from benchmarks.cache_substrate import EPOCH, MemorySubstrate
from benchmarks.cache_timeline import Consolidation, timeline
from benchmarks.cache_variants import variants as variants_of
from benchmarks.cache_wakeful import Wakeful
from wakeful.activities.handoff_note import cache_ttl_s
from wakeful.compiler import WindowPolicy
from wakeful.consolidation.policy import ConsolidationPolicy
from wakeful.consolidation.prompt import SummaryAsk, continued_summary_request
from wakeful.errors import UserError
from wakeful.providers.anthropic import AnthropicProvider, usage_from_anthropic
from wakeful.providers.base import Usage
from wakeful.providers.pricing import PRICE_TABLE_VERSION, cost_usd, price_for
from wakeful.testing.simulator import ManualClock, Script, SimulatorServer, Step
from wakeful.testing.simulator.script import ScriptedCall
from wakeful.tokenizers import BpeCounter

__all__ = ["Tally", "bench_policy", "run", "run_shape"]

CONSOLIDATION_SYSTEM = (
    "You consolidate an agent's history. Rewrite the events below as one line per step; "
    "keep every DECISION line verbatim."
)


def bench_policy() -> WindowPolicy:
    """The compile policy the benchmark runs Wakeful with."""
    return WindowPolicy.default()


@dataclass
class Tally:
    """Usage and cost of one strategy."""

    turns: list[Usage] = field(default_factory=list)
    maintenance: list[tuple[str, Usage]] = field(default_factory=list)
    cost: float = 0.0
    maintenance_cost: float = 0.0
    last_request: dict[str, Any] = field(default_factory=dict)
    reads: ReadTracker = field(default_factory=ReadTracker)
    held: dict[str, list[int]] = field(default_factory=dict)
    evidence: list[int] = field(default_factory=lambda: [0, 0])  # question calls, answered
    # [evidence tokens, window tokens] summed over the turns' requests, one counter each
    evidence_tokens: list[int] = field(default_factory=lambda: [0, 0])
    # [requests, tokens, requests that read nothing]: a request that read less than the
    # longest prefix of it the cache held live when it was sent (turns and maintenance
    # calls alike), the tokens it could have read, and how many of them read no token
    missed: list[int] = field(default_factory=lambda: [0, 0, 0])
    details: dict[str, Any] = field(default_factory=dict)  # the strategy's own report


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

    async def send(
        self, name: str, request: dict[str, Any], step: Step, tally: Tally | None = None
    ) -> Usage:
        """Send one request; with ``tally``, count it there if it read less than the cache
        held of it (a cached prefix it was sent past)."""
        sim = self.server.simulator
        held = sim.cached_prefix_tokens(f"bench-{name}", request) if tally is not None else 0
        usage = await self._send(name, request, step)
        if tally is not None and usage.cache_read_input_tokens < held:
            tally.missed[0] += 1
            tally.missed[1] += held - usage.cache_read_input_tokens
            tally.missed[2] += usage.cache_read_input_tokens == 0
        return usage

    async def _send(self, name: str, request: dict[str, Any], step: Step) -> Usage:
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
    evidence: Mapping[int, tuple[str, ...]] | None = None,
) -> tuple[dict[str, Tally], dict[str, Shortfall]]:
    """Replay the session through every strategy; return tallies, and the shortfall of
    every Wakeful strategy's windows against the limit. ``evidence`` maps a question
    wake's number to the text that answers it (counted when a request holds all of it)."""
    sub = MemorySubstrate()
    clock = ManualClock(start=EPOCH.timestamp())
    tallies = {s.name: Tally() for s in strategies}
    compiled = [s for s in strategies if isinstance(s, Wakeful)]
    shortfalls = {s.name: Shortfall() for s in compiled}
    previous_at: float | None = None
    with SimulatorServer(clock=clock) as server:
        runner = Runner(server, session)
        try:
            main = compiled[0] if compiled else None
            full = main.history_full if main is not None else (lambda: False)
            sessions = main.session_of if main is not None else None
            for item in timeline(session, sub, full, sessions):
                if isinstance(item, Consolidation):
                    if not item.read:
                        continue  # nothing old enough to consolidate: no model call
                    clock.advance(EPOCH.timestamp() + item.at - clock())
                    for w in compiled:  # every compiled strategy reads these summaries
                        request = consolidation_request(w, item, session, previous_at)
                        usage = await runner.send(
                            w.name, request, Step(text=item.written), tallies[w.name]
                        )
                        _charge(tallies[w.name], session, "consolidation", request, usage)
                    say(f"consolidated history at {item.at:.0f} s")
                    continue
                turn = item.turn
                clock.advance(EPOCH.timestamp() + turn.at - clock())
                for strategy in strategies:
                    tally = tallies[strategy.name]
                    await _call(runner, strategy, item, tally, session)
                    answer = (evidence or {}).get(turn.wake)
                    if answer:
                        tally.evidence[0] += 1
                        tally.evidence[1] += all_held(tally.last_request, answer)
                gap = turn.at - previous_at if previous_at is not None else 0.0
                for w in compiled:
                    prev = w.windows[-2].ledger if len(w.windows) > 1 else None
                    limit = call_limit(prev, w.windows[-1].ledger, gap, w.call_policy)
                    shortfalls[w.name].add(limit)
                previous_at = turn.at
                if (turn.index + 1) % 50 == 0:
                    say(f"turn {turn.index + 1}/{len(session.turns)}")
        finally:
            await runner.provider.aclose()
    return tallies, shortfalls


def consolidation_request(
    strategy: Wakeful, item: Consolidation, session: AgentSession, last_at: float | None
) -> dict[str, Any]:
    """The consolidation call's request as the worker's summarise activity builds it: the
    strategy's last request continued by the ask when that is likely still cached and its
    read costs less than the span sent again (``continued_summary_request``); else the
    span in a request of its own, the benchmark's."""
    plain = {
        "model": session.model,
        "max_tokens": MAX_TOKENS,
        "system": CONSOLIDATION_SYSTEM,
        "messages": [{"role": "user", "content": item.read}],
    }
    if not strategy.windows or last_at is None or not item.items:
        return plain
    window = strategy.windows[-1]
    if item.at - last_at > cache_ttl_s("anthropic", window.request):
        return plain
    price = price_for("anthropic", session.model)
    share = price.cache_read / price.input if price is not None else 1.0
    ask = SummaryAsk(1, list(item.items), [], [], ConsolidationPolicy().summary_max_tokens)
    continued = continued_summary_request(
        "anthropic", window.request, window.ledger, strategy.last_reply, ask, strategy.count, share
    )
    return continued if continued is not None else plain


def _charge(
    tally: Tally, session: AgentSession, kind: str, request: dict[str, Any], usage: Usage
) -> None:
    tally.reads.observe(request, usage)
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
        usage = await runner.send(strategy.name, extra.request, Step(text=extra.reply), tally)
        _charge(tally, session, extra.kind, extra.request, usage)
    usage = await runner.send(strategy.name, plan.request, _step(ctx.turn), tally)
    strategy.observe(ctx, usage)
    _charge(tally, session, "turn", plan.request, usage)
    held_decisions(tally, plan.request, session.decisions, ctx.turn.index)
    evidence, window = _evidence(strategy, plan.request)
    tally.evidence_tokens[0] += evidence
    tally.evidence_tokens[1] += window
    tally.last_request = plan.request


def _evidence(strategy: Strategy, request: dict[str, Any]) -> tuple[int, int]:
    """The evidence a turn's request carries and its size: for Wakeful, what its ledger puts
    in the evidence segment plus the wake's recorded evidence sent again (counted by its
    own counter); for a baseline, the retrieved documents (the simulator's tokenizer)."""
    if isinstance(strategy, Wakeful):
        ledger = strategy.windows[-1].ledger
        recorded = strategy.recorded_evidence_ids()
        rows = ledger.included()
        evidence = sum(r.tokens for r in rows if r.segment == "evidence" or r.block_id in recorded)
        return evidence, ledger.input_tokens
    return document_tokens(request), request_tokens(request)


def run_shape(
    shape: Shape,
    policy: WindowPolicy,
    *,
    window_turns: int,
    threshold: int,
    variants: bool,
    say: Callable[[str], None],
) -> dict[str, Any]:
    """Replay one shape through every strategy; its section of the report."""
    session = shape.session
    counter = BpeCounter()
    wakeful = Wakeful(session, policy, counter)
    strategies: list[Strategy] = [
        wakeful,
        FullHistory(),
        FullHistorySystem(),
        SlidingWindow(window_turns),
        SummarizeThreshold(threshold),
        ClearToolUses(),
        AnthropicCompaction(),
        ResponsesCompaction(),
    ]
    what: dict[str, str] = {}
    for variant in variants_of(policy) if variants else ():
        options = dict(variant.options)
        strategies.append(
            Wakeful(
                session,
                options.pop("policy", policy),
                counter,
                name=f"wakeful_{variant.name}",
                **options,
            )
        )
        what[f"wakeful_{variant.name}"] = variant.what
    try:
        tallies, shortfalls = asyncio.run(replay(session, strategies, say, shape.evidence))
        for s in strategies:
            tallies[s.name].details = s.details()
    finally:
        for s in strategies:
            if isinstance(s, Wakeful):
                s.close()  # its event index (a Qdrant Edge shard in a temporary folder)
    return shape_report(
        session,
        tallies,
        shortfalls,
        windows=wakeful.windows,
        variants=what,
        extra={"source": shape.source, "questions": shape.questions},
    )


def _summary(shapes: dict[str, Any]) -> dict[str, Any]:
    """One line per shape: the numbers the checks are about."""
    out = {}
    for name, r in shapes.items():
        w = r["strategies"]["wakeful"]
        checks = [c["met"] for c in r["checks"].values() if c["met"] is not None]
        out[name] = {
            "calls": r["calls"],
            "wakeful_cost_usd": w["cost_usd"],
            "full_history_cost_usd": r["strategies"]["full_history"]["cost_usd"],
            "wakeful_vs_full_history": w["cost_vs_full_history"],
            "cheapest_keeping_facts": r["cheapest_keeping_facts"],
            "wakeful_cache_hit_ratio": w["cache_hit_ratio"],
            "wakeful_written_never_read_share": w["written_never_read_share"],
            "wakeful_evidence_share_of_input": w["evidence_share_of_input"],
            "cost_usd": {n: s["cost_usd"] for n, s in r["strategies"].items()},
            "keeps_facts": {n: s["load_bearing_kept"] for n, s in r["strategies"].items()},
            "checks_met": f"{sum(checks)}/{len(checks)}",
        }
    return out


def run(
    turns: int = 200,
    *,
    seed: int = 11,
    split: str = "holdout",
    shapes: Sequence[str] = (),
    dataset: Path | str = DEFAULT_DATASET,
    window_turns: int = 30,
    threshold: int = 60_000,
    variants: bool = True,
    policy: WindowPolicy | None = None,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the benchmark over ``shapes`` (all by default) and return its report.

    ``turns`` sizes the synthetic shape; the what-if ``variants`` run on it only (they
    compare layouts of Wakeful's own window, and the synthetic session is where the
    earlier figures were measured).
    """
    say = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    started = time.perf_counter()
    names = list(dict.fromkeys(shapes or SHAPES))
    unknown = [n for n in names if n not in SHAPES]
    if unknown:
        raise UserError(f"unknown shape {unknown[0]!r}: use one of {', '.join(SHAPES)}")
    if split not in SPLITS:
        raise UserError(f"unknown split {split!r}: use one of {', '.join(SPLITS)}")
    conversations = load_split(dataset, split) if set(names) - {"synthetic"} else ()
    chosen = policy or bench_policy()
    results: dict[str, Any] = {}
    for name in names:
        shape = build_shape(name, conversations, seed, synthetic_turns=turns)
        s = shape.session
        say(
            f"shape {name} ({shape.source}): {len(s.turns)} calls in {len(s.wakes)} wakes, "
            f"{len({w.session for w in s.wakes})} sessions"
        )
        results[name] = run_shape(
            shape,
            chosen,
            window_turns=window_turns,
            threshold=threshold,
            variants=variants and name == "synthetic",
            say=say,
        )
    out: dict[str, Any] = {
        "split": split,
        "dataset": str(dataset),
        "conversations": [c.sample_id for c in conversations],
        "splits": {k: list(v) for k, v in SPLITS.items()},
        "settings": {
            "seed": seed,
            "synthetic_turns": turns,
            "model": "claude-sonnet-4-6",
            "price_table": PRICE_TABLE_VERSION,
            "policy": chosen.name,
            "policy_fingerprint": chosen.fingerprint,
            "sliding_window_turns": window_turns,
            "summarize_threshold_tokens": threshold,
        },
        "summary": _summary(results),
        "shapes": results,
    }
    out["seconds"] = round(time.perf_counter() - started, 1)
    say(f"done in {out['seconds']} s")
    return out


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--split", choices=sorted(SPLITS), default="holdout")
    parser.add_argument("--shape", action="append", choices=SHAPES, default=[])
    parser.add_argument("--dataset", default=str(DEFAULT_DATASET))
    parser.add_argument("--no-variants", action="store_true", help="skip the what-if variants")
    parser.add_argument("--json", action="store_true", help="print the JSON report to stdout")
    args = parser.parse_args(argv)
    result = run(
        args.turns,
        seed=args.seed,
        split=args.split,
        shapes=args.shape,
        dataset=args.dataset,
        variants=not args.no_variants,
    )
    print(json.dumps(result, indent=2, sort_keys=True) if args.json else result)


if __name__ == "__main__":
    main()
