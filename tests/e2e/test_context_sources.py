"""An agent's own context source: asked on every compile beside the built-in ones, in a
thread of its own, its blocks in the window and stored with the compile, so a replay
gives the same bytes after the world it read has moved on. Likewise a query source, asked
once the goal is classified."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from tests.e2e.harness import RunWakes, message
from wakeful.agents import Agent
from wakeful.compiler.blocks import Block, BlockKind, Stability
from wakeful.replay import recompile
from wakeful.substrate.query_sources import QueryContext, QuerySource
from wakeful.substrate.sources import ContextSource, SourceContext
from wakeful.substrate.store import Store


@dataclass
class Environment:
    """The state of a deployment environment, as an operator's source would read it."""

    state: str = "api: 3 replicas, version 1.4.2"
    name: str = "environment"
    stability: Stability = Stability.DYNAMIC
    substrate: bool = False
    threads: list[int] = field(default_factory=list)

    def blocks(self, ctx: SourceContext) -> Sequence[Block]:
        self.threads.append(threading.get_ident())
        return [
            Block(
                id="env:state",
                kind=BlockKind.TASK_FRAME,
                text=f"Environment now: {self.state}",
                source="environment",
            )
        ]


async def test_an_agents_own_source_reaches_the_window_and_replays(
    store: Store, agent: Agent, run_wakes: RunWakes
) -> None:
    env = Environment()
    assert isinstance(env, ContextSource)
    a = replace(agent, context_sources=(env,))
    ts = store.tenant(a.tenant)
    (result,) = await run_wakes(a, message("how is the api?"))
    assert result.status == "done", result.error
    (rec,) = ts.compiles(result.wake_id)
    window = json.loads(ts.get_blob(rec.window_hash))
    assert "Environment now: api: 3 replicas, version 1.4.2" in json.dumps(window)
    stored = json.loads(ts.get_blob(rec.spec_hash or ""))
    assert [b["id"] for b in stored["context_blocks"]] == ["env:state"]

    env.state = "api: 0 replicas"  # the world moved on; the past compile did not
    outcome = recompile(ts, rec)
    assert outcome.identical and outcome.snapshot_identical, outcome.summary()


@dataclass
class AfterCommit:
    """A source that returns only once the wake its compile opened is committed, as seen
    from a connection of its own (at most ``limit_s``: a failure timeout, not a sync)."""

    store: Store
    tenant: str
    agent: str
    limit_s: float = 30.0
    name: str = "after-commit"
    stability: Stability = Stability.DYNAMIC
    substrate: bool = False

    def blocks(self, ctx: SourceContext) -> Sequence[Block]:
        ts = self.store.tenant(self.tenant)
        seen = threading.Event()
        deadline = time.monotonic() + self.limit_s
        while not seen.is_set() and time.monotonic() < deadline:
            if any(w.wake_id == ctx.current_wake_id for w in ts.wakes(self.agent)):
                seen.set()
            else:
                seen.wait(0.05)
        text = "wake committed" if seen.is_set() else "wake not committed"
        return [Block(id="probe:commit", kind=BlockKind.TASK_FRAME, text=text, source="probe")]


async def test_an_agents_own_source_never_holds_the_compiles_transaction_open(
    store: Store, agent: Agent, run_wakes: RunWakes
) -> None:
    # The wake is opened in the first compile's transaction: a source waited for inside it
    # would never see that wake committed.
    a = replace(agent, context_sources=(AfterCommit(store, agent.tenant, agent.name),))
    ts = store.tenant(a.tenant)
    (result,) = await run_wakes(a, message("status?"))
    assert result.status == "done", result.error
    (rec,) = ts.compiles(result.wake_id)
    assert "wake committed" in ts.get_blob(rec.window_hash)


@dataclass
class Runbook:
    """A query source: the runbook page for what the goal was classified as."""

    pages: dict[str, str]
    name: str = "runbook"
    stability: Stability = Stability.DYNAMIC
    asked: list[QueryContext] = field(default_factory=list)

    def blocks(self, ctx: QueryContext) -> Sequence[Block]:
        self.asked.append(ctx)
        return [
            Block(id=f"runbook:{i}", kind=BlockKind.TASK_FRAME, text=page, source="runbook")
            for i, page in self.pages.items()
            if i in ctx.goal.intents
        ]


async def test_an_agents_query_source_gets_the_goal_as_classified_and_replays(
    store: Store, agent: Agent, run_wakes: RunWakes, tmp_path: Path
) -> None:
    policy = tmp_path / "ops.toml"
    policy.write_text('version = 1\n[[intents]]\nname = "status"\npatterns = ["api"]\n')
    env = Environment()
    runbook = Runbook({"status": "Runbook: check the api's replicas first."})
    assert isinstance(runbook, QuerySource)
    a = replace(agent, policy=str(policy), context_sources=(env,), query_sources=(runbook,))
    ts = store.tenant(a.tenant)
    (result,) = await run_wakes(a, message("how is the api?"))
    assert result.status == "done", result.error
    (rec,) = ts.compiles(result.wake_id)
    (ctx,) = runbook.asked
    # The goal as the policy's rules classified it, and the first phase's blocks, the
    # agent's own context source's among them.
    assert ctx.goal.text == "how is the api?" and ctx.goal.intents == ("status",)
    assert "env:state" in [b.id for b in ctx.blocks] and ctx.call_index == 0
    assert "Runbook: check the api's replicas first." in ts.get_blob(rec.window_hash)
    stored = json.loads(ts.get_blob(rec.spec_hash or ""))
    assert [b["id"] for b in stored["query_blocks"]] == ["runbook:status"]

    runbook.pages["status"] = "Runbook: rewritten since."  # the past compile was not
    outcome = recompile(ts, rec)
    assert outcome.identical and outcome.snapshot_identical, outcome.summary()
    assert len(runbook.asked) == 1  # the replay read the stored block, not the source


@dataclass
class GitStatus:
    """A layer whose one block keeps its id and changes between wakes: ``git status`` as
    each wake finds it (the Nth wake to ask sees N files changed)."""

    name: str = "git-status"
    stability: Stability = Stability.DYNAMIC
    substrate: bool = False
    wakes: list[str] = field(default_factory=list)

    def blocks(self, ctx: SourceContext) -> Sequence[Block]:
        if ctx.current_wake_id not in self.wakes:
            self.wakes.append(ctx.current_wake_id or "")
        n = self.wakes.index(ctx.current_wake_id or "") + 1
        text = f"git status: {n} file{'s' if n > 1 else ''} changed"
        return [Block(id="git:status", kind=BlockKind.TASK_FRAME, text=text, source="git")]


async def test_a_layers_current_content_reaches_every_wake_of_a_session(
    store: Store, agent: Agent, run_wakes: RunWakes
) -> None:
    """The first wake records the block with its evidence; the second wake of the session
    sends the block's content as it is now (not only the old one, in the first wake's
    recorded evidence), after the cached prefix, which stays the same."""
    a = replace(agent, context_sources=(GitStatus(),))
    ts = store.tenant(a.tenant)
    first, second = await run_wakes(a, message("what changed?"), message("and now?"))
    assert first.status == second.status == "done", (first.error, second.error)
    (w1,) = [w for w in ts.wakes(a.name) if w.wake_id == first.wake_id]
    (w2,) = [w for w in ts.wakes(a.name) if w.wake_id == second.wake_id]
    assert w1.session_id == w2.session_id  # one session
    before, after = ts.compiles(first.wake_id)[0], ts.compiles(second.wake_id)[0]
    window = ts.get_blob(after.window_hash)
    assert "git status: 2 files changed" in window
    # The new content comes after the second wake's ask: the cached prefix holds.
    assert window.index("and now?") < window.index("git status: 2 files changed")
    assert before.stable_prefix_hash == after.stable_prefix_hash
    assert "git status: 1 file changed" in ts.get_blob(before.window_hash)
