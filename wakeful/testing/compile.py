"""What window an agent's policy compiles, offline: no Temporal, no Postgres, no model.

:func:`compile_for` runs the compile activity's own path on a store you filled — the
snapshot from the agent's spec and the substrate's built-in context sources
(:func:`~wakeful.activities.snapshot_input.gather_snapshot`) and the agent's own context
and query sources, the goal classified by the policy's intent rules, then
:func:`~wakeful.compiler.compile_window` — and returns the
:class:`~wakeful.compiler.CompiledWindow`: its request as the provider would get it, its
blocks' ledger, its token counts.

What it leaves out of a worker's compile: retrieval from the vector index, the worker's
skills (``WAKEFUL_SKILLS_DIR``) and policy directory, MCP tools, a model intent classifier,
and the writes (the compile record, expired decisions retired and named in the ledger).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import cast

from wakeful.activities.snapshot_input import ask_query_sources, gather_snapshot, with_own
from wakeful.activities.wake import ask_event
from wakeful.agents import Agent
from wakeful.compiler import CompiledWindow, TokenCounter, WindowPolicy, compile_window
from wakeful.compiler.blocks import Goal, GoalKind
from wakeful.compiler.intents import classify_goal
from wakeful.errors import UserError
from wakeful.policy_files import is_policy_path, load_policy_path
from wakeful.skills import load_skills_dir, spec_with_skills
from wakeful.substrate.snapshot import RECENT_LIMIT
from wakeful.substrate.store import TenantStore
from wakeful.testing.memory import MemoryStore

__all__ = ["compile_for"]


def compile_for(
    agent: Agent,
    store: MemoryStore | TenantStore,
    text: str,
    *,
    now: datetime,
    policy: WindowPolicy | None = None,
    session_id: str | None = None,
    wake_id: str = "offline",
    recent_limit: int = RECENT_LIMIT,
    counter: TokenCounter | None = None,
) -> CompiledWindow:
    """The window of the first model call of a wake of ``agent`` asked ``text`` at ``now``.

    The ask is appended to ``store`` as a wake appends it (a user turn of ``wake_id`` in
    ``session_id``, step key ``<wake_id>:ask``), so calling again for the same wake compiles
    from the same history; asking the same wake something else is refused. The snapshot is
    read at the agent's current knowledge revision, as the compile activity reads it.
    ``policy`` defaults to the agent's (``default``, or the file it names); a policy of a
    worker's policy directory must be passed. ``session_id`` None: the raw tail is the
    agent's newest events of every session. ``counter`` defaults to the worker's.
    """
    name = agent.name
    goal = Goal(kind=GoalKind.MESSAGE, text=text)
    ask = ask_event(goal, step=f"{wake_id}:ask", session_id=session_id, wake_id=wake_id, at=now)
    (stored,) = store.append_events(name, [ask])
    if stored.text != ask.text:
        raise UserError(
            f"wake {wake_id!r} of agent {name!r} was asked {stored.text[:60]!r} already;"
            " pass another wake_id"
        )
    policy = policy or _policy_of(agent)
    spec = agent.spec()
    if agent.skills_dir is not None:
        spec = spec_with_skills(spec, load_skills_dir(Path(agent.skills_dir)))
    # The TenantStore methods a snapshot reads, which MemoryStore has too.
    ts = cast(TenantStore, store)
    max_event_id = ts.max_event_id(name)
    snapshot, started = gather_snapshot(
        ts,
        spec,
        session_id=session_id,
        wake_id=wake_id,
        max_event_id=max_event_id,
        as_of=now,
        recent_limit=recent_limit,
        revision=ts.knowledge_revision(name),
        policy=policy,
        sources=agent.context_sources,
    )
    snapshot = with_own(snapshot, started.blocks(snapshot.blocks))
    classified = classify_goal(goal, policy)
    goal = goal if classified is None else classified.goal
    snapshot = ask_query_sources(
        ts,
        snapshot,
        spec,
        retrieval=None,
        own=agent.query_sources,
        goal=goal,
        policy=policy,
        call_index=0,
        max_event_id=max_event_id,
    )
    if counter is None:
        from wakeful.tokenizers import BpeCounter

        counter = BpeCounter()
    return compile_window(snapshot, goal, policy, now, counter=counter)


def _policy_of(agent: Agent) -> WindowPolicy:
    if agent.policy == "default":
        return WindowPolicy.default()
    if is_policy_path(agent.policy):
        return load_policy_path(Path(agent.policy))
    raise UserError(
        f"agent {agent.name!r} uses policy {agent.policy!r} of a worker's policy directory;"
        " pass policy= (e.g. load_policy_path(Path('policies/x.toml')))"
    )
