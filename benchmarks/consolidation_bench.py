"""``wakeful bench consolidation``: does consolidation keep what must never be lost?

A 500-turn operations session (:mod:`benchmarks.consolidation_session`: 20 constraints,
two of which replace earlier ones, and 50 facts, 12 corrected later) is written day by day
into a real Postgres (embedded, in a temporary directory). After each day one consolidation
round runs — the same :func:`~wakeful.workflows.consolidation.consolidation_round` the
workflow runs, with the activities called in-process, summaries written by the provider
simulator through the real Anthropic SDK. The first summary draft that contains a negation
is corrupted on its way back (a negation dropped, a fact's number changed): a planted lossy
summary the gate has to catch. After three rounds the agent's next window is compiled by the real
compiler from a real snapshot, and the report says:

* ``constraints_kept`` — share of the live constraints present in the window as
  load-bearing registry entries (full text, with their id);
* ``superseded_presented`` — facts whose replaced value appears in the window in a line
  not marked superseded (0 is right);
* ``compression`` — tokens of the raw history / input tokens of the window;
* ``lossy_summary_rejected`` — the planted lossy draft was rejected and its span kept raw.

The details behind the figures go to stderr, with a baseline: the same history never
consolidated, compiled the same way. The compiler alone already bounds that window (a
bounded raw tail, resolved tool output collapsed), but it states few of the constraints
and shows replaced values as current — compression without consolidation is not the point.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel

from benchmarks.consolidation_session import SESSION, Session, generate_session
from wakeful.activities.consolidate_memory import consolidation_activities
from wakeful.activities.deps import ActivityDeps
from wakeful.activities.snapshot_input import build_snapshot
from wakeful.agents import Agent, AgentRegistry
from wakeful.compiler import (
    CompiledWindow,
    Goal,
    GoalKind,
    WindowPolicy,
    compile_window,
    content_hash,
)
from wakeful.consolidation.contracts import ConsolidationInput, ConsolidationResult
from wakeful.consolidation.policy import ConsolidationPolicy
from wakeful.consolidation.text import contains_token
from wakeful.providers.base import ModelProvider, ModelReply
from wakeful.providers.registry import build_provider
from wakeful.substrate.store import Store, TenantStore
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.tokenizers import BpeCounter
from wakeful.worker.serve import register_agent
from wakeful.workflows.consolidation import consolidation_round

INSTRUCTIONS = (
    "You are the operations agent for a payments company. Keep services healthy, follow "
    "every standing rule, and report clearly."
)


# Awaited around each round: (tenant, agent, the round's time).
Hook = Callable[[TenantStore, Agent, datetime], Awaitable[None]]


class DirectCaller:
    """Runs consolidation activities in-process, by their wire names."""

    def __init__(self, deps: ActivityDeps) -> None:
        self.table = {
            getattr(fn, "__temporal_activity_definition").name: fn
            for fn in consolidation_activities(deps)
        }

    async def __call__(
        self, name: str, arg: BaseModel, result_type: type[Any], *, model: bool = False
    ) -> Any:
        fn: Callable[[Any], Any] = self.table[name]
        out = fn(arg)
        return await out if inspect.isawaitable(out) else out


class LossyOnce:
    """A provider that corrupts one summary — the first asked for a span that holds
    ``target`` — by dropping a negation and changing a number: the kind of quiet loss a
    summariser makes."""

    def __init__(self, inner: ModelProvider, target: str) -> None:
        self.inner = inner
        self.name = inner.name
        self.target = target
        self.planted: str | None = None

    async def complete(self, request: dict[str, Any]) -> ModelReply:
        reply = await self.inner.complete(request)
        if self.planted is None and self.target in json.dumps(request):
            lossy = corrupt(reply.text)
            if lossy != reply.text:
                self.planted = lossy
                return reply.model_copy(update={"text": lossy})
        return reply


def corrupt(text: str) -> str:
    """Drop the first negation of a line, and change the number in the first fact line."""
    lines = text.split("\n")
    negated = next((n for n, x in enumerate(lines) if re.search(r"\b(?:never|not) ", x)), None)
    if negated is None:
        return text
    lines[negated] = re.sub(r"\b(?:never|not) ", "", lines[negated], count=1)
    number = re.compile(r"(?<![\w.-])(\d+)(?![\w-]|\.\d)")
    for n, line in enumerate(lines):
        if "FYI" in line and number.search(line):
            lines[n] = number.sub(lambda m: str(int(m.group(1)) + 1), line, count=1)
            break
    return "\n".join(lines)


def window_text(request_json: str) -> str:
    """Every string of a rendered request, one per line."""
    out: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, str):
            out.append(node)
        elif isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(request_json))
    return "\n".join(out)


def superseded_shown(session: Session, text: str) -> list[str]:
    """Replaced values the window states without marking them superseded."""
    shown = []
    for f in session.facts:
        if f.new_value is None:
            continue
        for line in text.split("\n"):
            if (
                contains_token(line, f.value)
                and f.subject.lower() in line.lower()
                and "superseded" not in line
            ):
                shown.append(f"{f.subject}={f.value}: {line[:120]}")
                break
    return shown


async def measure(
    store: Store,
    sim: SimulatorServer,
    *,
    tenant: str,
    turns: int = 500,
    seed: int = 11,
    rounds: int = 3,
    start: datetime | None = None,
    api_key: str = "bench-consolidation",
    before_round: Hook | None = None,
    after_round: Hook | None = None,
) -> dict[str, Any]:
    """Run the scenario on ``store``; returns the four figures and the details behind them.
    ``before_round`` is awaited once a day's events are in, ``after_round`` after its round,
    each with the tenant, the agent and the round's time (e.g. to index the day's events as
    its wakes would, and to compile the next window)."""
    start = start or datetime.now(UTC).replace(second=0, microsecond=0)
    session = generate_session(start, turns=turns, days=rounds, seed=seed)
    agent = Agent(name="ops", instructions=INSTRUCTIONS, tenant=tenant)
    ts = store.tenant(tenant)
    register_agent(ts, agent)
    inner = build_provider("anthropic", api_key=api_key, base_url=sim.base_url)
    provider = LossyOnce(inner, target=session.constraints[0][1])
    counter = BpeCounter()
    deps = ActivityDeps(
        store=store, agents=AgentRegistry([agent]), providers=lambda _: provider, counter=counter
    )
    call = DirectCaller(deps)
    inp = ConsolidationInput(runtime=agent.runtime(), policy=ConsolidationPolicy(), reason="demand")
    results: list[ConsolidationResult] = []
    now = start
    try:
        for day in range(rounds):
            today = [e for e, d in zip(session.events, session.day_of, strict=True) if d == day]
            ts.append_events(agent.name, today)
            now = start + timedelta(days=day + 1, hours=1)
            if before_round is not None:
                await before_round(ts, agent, now)
            res = await consolidation_round(call, inp, now=now, round_id=f"bench/{seed}/{day + 1}")
            results.append(res)
            print(f"round {day + 1}: {res.model_dump_json(exclude_none=True)}", file=sys.stderr)
            if after_round is not None:
                await after_round(ts, agent, now)
    finally:
        # Closed here, on this loop: an SDK client collected unclosed is closed on whatever
        # event loop runs then (a workflow's, in a test process), and warns there.
        await inner.aclose()  # type: ignore[attr-defined]
    return _figures(ts, agent, session, counter, provider, results, now + timedelta(minutes=5))


def next_window(
    ts: TenantStore, agent: Agent, counter: BpeCounter, as_of: datetime
) -> CompiledWindow:
    """The agent's next window, as the compile activity would build it."""
    snapshot = build_snapshot(
        ts,
        agent.spec(),
        session_id=SESSION,
        wake_id=None,
        max_event_id=ts.max_event_id(agent.name),
        as_of=as_of,
        recent_limit=200,
    )
    goal = Goal(kind=GoalKind.MESSAGE, text="Carry on monitoring. What must I keep in mind?")
    return compile_window(snapshot, goal, WindowPolicy.default(), as_of, counter=counter)


def kept_constraints(session: Session, text: str) -> list[str]:
    """Live constraints whose full text appears anywhere in the window."""
    return [cid for cid, body in session.live_constraints if body in text]


def _figures(
    ts: TenantStore,
    agent: Agent,
    session: Session,
    counter: BpeCounter,
    provider: LossyOnce,
    results: list[ConsolidationResult],
    as_of: datetime,
) -> dict[str, Any]:
    window = next_window(ts, agent, counter, as_of)
    text = window_text(window.request_json)
    live = session.live_constraints
    kept = [cid for cid, body in live if f"[{cid}] {body}" in text]  # as registry entries
    shown = superseded_shown(session, text)
    raw = sum(counter.count(e.text) for e in session.events)
    log = ts.consolidation_log(agent.name, limit=10_000)
    planted = content_hash(provider.planted) if provider.planted else None
    verdicts = [r for r in log if r.output_hash == planted and r.action == "summary"]
    rejected = bool(verdicts) and all(r.status == "rejected" for r in verdicts)
    baseline = _without_consolidation(ts, agent, session, counter, as_of)
    details = {
        "without_consolidation": baseline,
        "live_constraints": len(live),
        "missing_constraints": sorted(set(c for c, _ in live) - set(kept)),
        "superseded_lines": shown,
        "raw_tokens": raw,
        "window_tokens": window.input_tokens,
        "tokens_by_bucket": dict(window.tokens_by_bucket),
        "planted_reasons": verdicts[0].detail.get("reasons", []) if verdicts else [],
        "rounds": [r.model_dump(mode="json", exclude_none=True) for r in results],
    }
    print(json.dumps(details, indent=1, default=str), file=sys.stderr)
    return {
        "constraints_kept": round(len(kept) / len(live), 4) if live else 1.0,
        "superseded_presented": len(shown),
        "compression": round(raw / window.input_tokens, 2),
        "lossy_summary_rejected": rejected,
        "_details": details,
    }


def _without_consolidation(
    ts: TenantStore, agent: Agent, session: Session, counter: BpeCounter, as_of: datetime
) -> dict[str, Any]:
    """The same history in a fresh tenant, never consolidated: what the window would be."""
    raw = Store(ts.engine).tenant(f"{ts.name}-raw")
    register_agent(raw, agent)
    raw.append_events(agent.name, session.events)
    window = next_window(raw, agent, counter, as_of)
    text = window_text(window.request_json)
    return {
        "window_tokens": window.input_tokens,
        "constraints_stated": len(kept_constraints(session, text)),
        "superseded_presented": len(superseded_shown(session, text)),
    }


def run(*, turns: int = 500, seed: int = 11) -> dict[str, Any]:
    """The benchmark on a fresh embedded Postgres; the four figures of the report."""
    from wakeful.testing.servers import embedded_postgres

    with embedded_postgres("wkcb") as pg:
        store = Store.connect(pg.url)
        try:
            with SimulatorServer() as sim:
                out = asyncio.run(measure(store, sim, tenant="bench", turns=turns, seed=seed))
        finally:
            store.close()
    out.pop("_details")
    return out
