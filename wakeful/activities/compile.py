"""The compile activity: gather a point-in-time snapshot, run the pure compiler, store the window.

The window and its ledger go to the substrate (content-addressed); only their hashes return
to the workflow.
"""

from __future__ import annotations

from datetime import datetime

from temporalio import activity

from wakeful.activities.deps import ActivityDeps
from wakeful.activities.wake import step_key
from wakeful.agents import Agent
from wakeful.compiler import CompiledWindow, compile_window
from wakeful.compiler.blocks import AgentProfile, Block, BlockKind, Goal, Snapshot, content_hash
from wakeful.contracts import COMPILE, CompileIn, CompileOut
from wakeful.substrate.records import CompileRecord
from wakeful.substrate.snapshot import load_blocks
from wakeful.substrate.store import TenantStore


def profile_blocks(agent: Agent) -> list[Block]:
    """The agent's stable prefix: its instructions and its tools, in declaration order."""
    blocks = [
        Block(
            id="system:instructions",
            kind=BlockKind.SYSTEM_RULE,
            text=agent.instructions,
            source=f"agent:{agent.name}",
            seq=0,
            importance=1.0,
        )
    ]
    for i, tool in enumerate(agent.tools):
        blocks.append(
            Block(
                id=f"tool:{tool.name}",
                kind=BlockKind.TOOL_SCHEMA,
                text=tool.description,
                source=f"agent:{agent.name}:tools",
                seq=i,
                tool_name=tool.name,
                tool_input=tool.input_schema,
                importance=1.0,
            )
        )
    return blocks


def build_snapshot(
    deps: ActivityDeps,
    ts: TenantStore,
    agent: Agent,
    *,
    session_id: str | None,
    wake_id: str | None,
    max_event_id: int,
    as_of: datetime,
) -> Snapshot:
    blocks = profile_blocks(agent) + load_blocks(
        ts,
        agent.name,
        max_event_id=max_event_id,
        as_of=as_of,
        current_wake_id=wake_id,
        session_id=session_id,
        recent_limit=deps.recent_limit,
    )
    return Snapshot(
        agent=AgentProfile(
            tenant=agent.tenant,
            name=agent.name,
            model=agent.model,
            provider=agent.provider,
            instructions=agent.instructions,
        ),
        as_of=as_of,
        session_id=session_id,
        current_wake_id=wake_id,
        blocks=tuple(blocks),
    )


def run_compile(
    deps: ActivityDeps, agent: Agent, snapshot: Snapshot, goal: Goal, policy_name: str
) -> CompiledWindow:
    return compile_window(
        snapshot, goal, deps.policy(policy_name), snapshot.as_of, counter=deps.counter
    )


class CompileActivities:
    def __init__(self, deps: ActivityDeps) -> None:
        self.deps = deps

    @activity.defn(name=COMPILE)
    def compile(self, inp: CompileIn) -> CompileOut:
        wake = inp.wake
        ts = self.deps.store.tenant(wake.tenant)
        key = step_key(wake, inp.call_index, "compile")
        agent = self.deps.agents.get(wake.tenant, wake.agent)
        max_event_id = ts.max_event_id(wake.agent)
        snapshot = build_snapshot(
            self.deps,
            ts,
            agent,
            session_id=wake.session_id,
            wake_id=wake.wake_id,
            max_event_id=max_event_id,
            as_of=inp.now,
        )
        window = run_compile(self.deps, agent, snapshot, inp.goal, inp.runtime.policy)
        window_hash = ts.put_blob("window", window.request_json)
        ledger_hash = ts.put_blob("ledger", window.ledger.model_dump_json())
        snapshot_hash = content_hash(snapshot.model_dump_json())
        policy_json = self.deps.policy(inp.runtime.policy).model_dump_json()
        rec = ts.record_compile(
            CompileRecord(
                agent=wake.agent,
                wake_id=wake.wake_id,
                step_key=key,
                call_index=inp.call_index,
                as_of=inp.now,
                max_event_id=max_event_id,
                goal=inp.goal.model_dump(mode="json"),
                policy_hash=ts.put_blob("policy", policy_json),
                snapshot_hash=snapshot_hash,
                window_hash=window_hash,
                ledger_hash=ledger_hash,
                stable_prefix_hash=window.stable_prefix_hash,
                input_tokens=window.input_tokens,
                tokens_by_bucket=dict(window.tokens_by_bucket),
            )
        )
        # A retry after a crash returns the first compile, so the model sees one window.
        return CompileOut(
            step_key=rec.step_key,
            window_hash=rec.window_hash,
            stable_prefix_hash=rec.stable_prefix_hash,
            input_tokens=rec.input_tokens,
            max_event_id=rec.max_event_id,
        )
