"""``wakeful demo``: the whole system, offline, on the embedded stack.

Brings the stack up, starts the provider simulator on loopback (the real Anthropic SDK talks
to it), runs a worker in-process, and wakes the demo agent five times across two sessions.
Every run continues the same agent: state is reused, not reset.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import SecretStr

from wakeful.activities.deps import ActivityDeps
from wakeful.agents import AgentRegistry
from wakeful.cli.command import wakeful_command
from wakeful.compiler.blocks import Goal, GoalKind
from wakeful.contracts import Trigger, WakeResult
from wakeful.demo.agent import PLAN, demo_agent, seed_workspace
from wakeful.substrate.store import Store, TenantStore
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.tokenizers import BpeCounter
from wakeful.worker.client import connect, wake
from wakeful.worker.serve import ProviderCache, open_index, open_vectors, register_agent
from wakeful.worker.settings import Settings
from wakeful.worker.stack import EmbeddedStack
from wakeful.worker.worker import build_worker

DEMO_TASK_QUEUE = "wakeful-demo"


@dataclass(frozen=True)
class CallRow:
    wake: int
    session: str
    call: int
    buckets: dict[str, int]
    input_tokens: int
    cache_read: int
    cache_write: int
    output_tokens: int
    prefix: str
    cost_usd: float


def register_demo(ts: TenantStore, workdir: Path, provider: str = "anthropic") -> AgentRegistry:
    agent = demo_agent(workdir, tenant=ts.name, provider=provider)
    register_agent(ts, agent)
    return AgentRegistry([agent])


def to_stderr(message: str) -> None:
    """Progress: to stderr, so stdout stays the demo's report."""
    print(message, file=sys.stderr, flush=True)


async def run_demo(
    settings: Settings,
    *,
    say: Callable[[str], object] = print,
    provider: str = "anthropic",
    progress: Callable[[str], object] = to_stderr,
) -> list[WakeResult]:
    """The demo; ``provider`` is ``anthropic`` or ``openai`` (its agent has its own history:
    the simulator speaks both wire formats and applies each provider's caching rules).
    ``say`` gets the report, ``progress`` a line per step while it runs (stack, wakes)."""
    echo = say
    progress("demo: starting the embedded stack (running servers are reused)...")
    endpoints = EmbeddedStack(settings).up()
    progress(f"demo: stack up (Temporal {endpoints.temporal_address})")
    store = Store.connect(endpoints.database_url)
    ts = store.tenant(settings.tenant)
    workdir = seed_workspace(settings.state_dir.resolve() / "demo-workspace")
    registry = register_demo(ts, workdir, provider)
    (agent,) = list(registry)
    runtime = agent.runtime()
    results: list[WakeResult] = []
    run = uuid.uuid4().hex[:8]
    with SimulatorServer() as sim:
        progress(f"demo: provider simulator on {sim.base_url}; starting a worker...")
        # Both providers pointed at the simulator; one SDK client each, closed at the end.
        key = SecretStr("sim-demo-key")
        providers = ProviderCache(
            settings.model_copy(
                update={
                    "anthropic_api_key": key,
                    "anthropic_base_url": sim.base_url,
                    "openai_api_key": key,
                    "openai_base_url": sim.base_url,
                }
            )
        )
        vectors = open_vectors(endpoints, settings)
        deps = ActivityDeps(
            store=store,
            agents=registry,
            providers=providers,
            counter=BpeCounter(),
            vectors=vectors,
        )
        open_index(deps)
        client = await connect(endpoints.temporal_address, endpoints.temporal_namespace)
        try:
            async with build_worker(client, deps, DEMO_TASK_QUEUE):
                for i, (message, new_session) in enumerate(PLAN, start=1):
                    progress(
                        f"demo: wake {i}/{len(PLAN)} of {agent.name}"
                        f"{' (new session)' if new_session else ''}: {message[:60]}..."
                    )
                    trigger = Trigger(
                        goal=Goal(kind=GoalKind.MESSAGE, text=message),
                        idempotency_key=f"demo-{run}-{i}",
                        new_session=new_session,
                    )
                    result = await wake(client, runtime, trigger, DEMO_TASK_QUEUE)
                    echo(
                        f"wake {result.number:>3}  {result.session_id:<22} {result.status:<6}"
                        f" calls={result.model_calls} tools={result.tool_calls}"
                    )
                    results.append(result)
        finally:
            await providers.aclose()
            vectors.close()  # flush the shard and release it for the next process
    rows = call_rows(ts, results)
    echo("")
    echo(render_table(rows))
    total = sum(r.cost_usd for r in rows)
    echo(f"\n{len(results)} wakes, {len(rows)} model calls, total ${total:.4f}")
    last = results[-1]
    cmd = wakeful_command()  # as it works here, with the virtualenv active or not
    echo(
        f"\nInspect: {cmd} explain {agent.name} --wake {last.number}"
        f"   {cmd} diff {agent.name} --wake {last.number} --vs {last.number - 1}"
        f"   {cmd} handoff show {agent.name}"
    )
    echo(f"State: {settings.state_dir.resolve()}  (workspace: {workdir})")
    running = [n for n in ("postgres", "temporal") if n in endpoints.embedded]
    if running:
        names = " and ".join({"postgres": "Postgres", "temporal": "Temporal"}[n] for n in running)
        echo(
            f"The embedded {names} keep running for the commands above;"
            f" `{cmd} stack down` stops them (the state stays)."
        )
    store.close()
    return results


def call_rows(ts: TenantStore, results: list[WakeResult]) -> list[CallRow]:
    rows = []
    for r in results:
        compiles = {c.call_index: c for c in ts.compiles(r.wake_id)}
        for m in ts.model_calls(r.wake_id):
            c = compiles[m.call_index]
            rows.append(
                CallRow(
                    wake=r.number,
                    session=r.session_id.rsplit(":", 1)[-1],
                    call=m.call_index,
                    buckets=c.tokens_by_bucket,
                    input_tokens=m.input_tokens,
                    cache_read=m.cache_read_input_tokens,
                    cache_write=m.cache_creation_input_tokens,
                    output_tokens=m.output_tokens,
                    prefix=c.stable_prefix_hash[:10],
                    cost_usd=m.cost_usd,
                )
            )
    return rows


def render_table(rows: list[CallRow]) -> str:
    buckets = sorted({b for r in rows for b in r.buckets})
    head = [
        "wake",
        "sess",
        "call",
        *buckets,
        "uncached",
        "c.read",
        "c.write",
        "out",
        "prefix",
        "cost $",
    ]
    lines = [head]
    for r in rows:
        lines.append(
            [
                str(r.wake),
                r.session,
                str(r.call),
                *(str(r.buckets.get(b, 0)) for b in buckets),
                str(r.input_tokens),
                str(r.cache_read),
                str(r.cache_write),
                str(r.output_tokens),
                r.prefix,
                f"{r.cost_usd:.5f}",
            ]
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    out = ["  ".join(cell.rjust(w) for cell, w in zip(line, widths, strict=True)) for line in lines]
    out.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(out)
