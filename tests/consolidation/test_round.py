"""Consolidation rounds in-process: the activities on real Postgres, summaries written by
the simulator through the real Anthropic SDK."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from benchmarks.consolidation_bench import DirectCaller, measure
from tests.conversation import conversation
from tests.e2e.harness import Providers
from wakeful.activities.deps import ActivityDeps
from wakeful.activities.snapshot_input import build_snapshot
from wakeful.agents import Agent, AgentRegistry
from wakeful.compiler import Budget, Goal, GoalKind, WindowPolicy, compile_window
from wakeful.consolidation.contracts import (
    CAPTURE,
    COMMIT,
    DREAM,
    HYGIENE,
    PLAN,
    PRESSURE,
    SUMMARISE,
    AgentIn,
    CaptureOut,
    CommitIn,
    CommitOut,
    ConsolidationInput,
    DraftOut,
    DreamOut,
    HygieneOut,
    PlanIn,
    PlanOut,
    PressureOut,
    SpanIn,
)
from wakeful.consolidation.policy import ConsolidationPolicy
from wakeful.substrate.records import CompileRecord, EventIn, MemoryRecord, StoredEvent
from wakeful.substrate.store import Store, TenantStore
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.tokenizers import BpeCounter
from wakeful.workflows.consolidation import consolidation_round

NOW = datetime.now(UTC).replace(microsecond=0) + timedelta(days=1)
POLICY = ConsolidationPolicy(keep_recent_events=2, span_min_events=2)
COUNTER = BpeCounter()


def caller(store: Store, agent: Agent, sim: SimulatorServer) -> DirectCaller:
    key = uuid.uuid4().hex  # the simulator keeps script cursors per API key
    deps = ActivityDeps(
        store=store,
        agents=AgentRegistry([agent]),
        providers=Providers(sim, key),  # one client, not one per call left to the collector
        counter=COUNTER,
    )
    return DirectCaller(deps)


def turns(
    ts: TenantStore, texts: list[str], *, hours_ago: float = 48, kind: str = "turn"
) -> list[int]:
    base = NOW - timedelta(hours=hours_ago)
    key = f"t:{uuid.uuid4().hex}:"
    events = conversation(texts, session_id="ops:s1", start=base, step_key=key)
    return [e.id for e in ts.append_events("ops", events)]


def agent_in(ts: TenantStore, round_id: str, policy: ConsolidationPolicy = POLICY) -> AgentIn:
    return AgentIn(tenant=ts.name, agent="ops", now=NOW, round_id=round_id, policy=policy)


async def test_the_benchmark_scenario_keeps_every_live_constraint(
    store: Store, sim: SimulatorServer
) -> None:
    out = await measure(
        store, sim, tenant=f"t-{uuid.uuid4().hex[:12]}", turns=300, api_key=uuid.uuid4().hex
    )
    assert out["constraints_kept"] == 1.0
    assert out["superseded_presented"] == 0
    assert out["lossy_summary_rejected"] is True
    assert out["compression"] > 3
    details = out["_details"]
    assert details["live_constraints"] == 18
    assert any(r.startswith("negations") for r in details["planted_reasons"])


async def test_nothing_is_retired_before_its_rules_are_in_the_registry(
    tenant: TenantStore, ops: Agent, store: Store, sim: SimulatorServer
) -> None:
    call = caller(store, ops, sim)
    turns(
        tenant,
        ["Never deploy on a Friday.", "Understood.", "Thanks.", "Sure thing.", "Hi", "Hello"],
    )
    a = agent_in(tenant, "r1")
    (span,) = (await call(PLAN, PlanIn(agent=a), PlanOut)).spans
    draft = await call(
        SUMMARISE, SpanIn(agent=a, span=span, provider="anthropic", model="m"), DraftOut
    )
    out = await call(COMMIT, CommitIn(agent=a, span=span, output_hash=draft.output_hash), CommitOut)
    assert out.status == "rejected"
    assert out.reasons[0].startswith("promotion: not in the registry yet: LB-")
    assert len(tenant.events("ops", include_retired=False)) == 6  # the span stays raw
    assert (
        await call(COMMIT, CommitIn(agent=a, span=span, output_hash=draft.output_hash), CommitOut)
    ) == out

    b = agent_in(tenant, "r2")
    captured = await call(CAPTURE, b, CaptureOut)
    assert len(captured.promoted) == 1
    draft = await call(
        SUMMARISE, SpanIn(agent=b, span=span, provider="anthropic", model="m"), DraftOut
    )
    out = await call(COMMIT, CommitIn(agent=b, span=span, output_hash=draft.output_hash), CommitOut)
    assert out.status == "accepted", out.reasons
    (summary,) = tenant.summaries("ops")
    assert "Never deploy on a Friday." in summary.text and summary.gate["passed"] is True
    assert [e.retired_at is not None for e in tenant.events("ops")] == [True] * 4 + [False] * 2
    log = [(e.action, e.status) for e in tenant.consolidation_log("ops")]
    assert log == [
        ("draft", "drafted"),
        ("summary", "rejected"),
        ("draft", "drafted"),
        ("summary", "accepted"),
    ]


def compile_for(ts: TenantStore, agent: Agent, policy: WindowPolicy, key: str) -> CompileRecord:
    snapshot = build_snapshot(
        ts,
        agent.spec(),
        session_id="ops:s1",
        wake_id=None,
        max_event_id=ts.max_event_id("ops"),
        as_of=NOW,
        recent_limit=200,
    )
    goal = Goal(kind=GoalKind.MESSAGE, text="status?")
    window = compile_window(snapshot, goal, policy, NOW, counter=COUNTER)
    return ts.record_compile(
        CompileRecord(
            agent="ops",
            wake_id="w",
            step_key=key,
            call_index=0,
            as_of=NOW,
            max_event_id=0,
            goal={},
            policy_hash="p",
            snapshot_hash="s",
            window_hash=ts.put_blob("window", window.request_json),
            ledger_hash=ts.put_blob("ledger", window.ledger.model_dump_json()),
            stable_prefix_hash=window.stable_prefix_hash,
            input_tokens=window.input_tokens,
            tokens_by_bucket=dict(window.tokens_by_bucket),
        )
    )


async def test_pressure_is_read_from_the_latest_compile(
    tenant: TenantStore, ops: Agent, store: Store, sim: SimulatorServer
) -> None:
    call = caller(store, ops, sim)
    a = agent_in(tenant, "p")
    assert (await call(PRESSURE, a, PressureOut)).pressured is False  # no compile yet
    turns(
        tenant,
        [f"Status report {i}: " + "all queues drained and healthy. " * 40 for i in range(30)],
    )
    compile_for(tenant, ops, WindowPolicy.default(), "c1")
    assert (await call(PRESSURE, a, PressureOut)).pressured is False
    tight = WindowPolicy(budget=Budget(context_limit=6_000, output_reserve=1_000))
    rec = compile_for(tenant, ops, tight, "c2")
    out = await call(PRESSURE, a, PressureOut)
    assert out.pressured and out.compile_step == rec.step_key and out.evicted_tokens > 0
    inp = ConsolidationInput(runtime=ops.runtime(), policy=POLICY, only_if_pressured=True)
    result = await consolidation_round(call, inp, now=NOW, round_id="pressured")
    assert result.skipped is None and result.accepted >= 1


async def test_hygiene_reverifies_marks_and_decays_memories(
    tenant: TenantStore, ops: Agent, store: Store, sim: SimulatorServer
) -> None:
    call = caller(store, ops, sim)
    old = NOW - timedelta(days=90)

    def remember(key: str, text: str, importance: float = 0.5, at: datetime = old) -> MemoryRecord:
        rec = MemoryRecord(
            agent="ops",
            step_key=f"m:{key}",
            key=key,
            text=text,
            source="test",
            importance=importance,
            captured_at=at,
        )
        return tenant.remember(rec)

    def read(step: str, call_id: str, text: str, hours_ago: float) -> StoredEvent:
        """A read_file result that arrived ``hours_ago`` before NOW: evidence for hygiene."""
        (event,) = tenant.append_events(
            "ops",
            [
                EventIn(
                    step_key=step,
                    kind="tool_result",
                    role="user",
                    tool_call_id=call_id,
                    tool_name="read_file",
                    text=text,
                    event_time=NOW - timedelta(hours=hours_ago),
                )
            ],
        )
        return event

    used = remember("banner", "The demo banner colour is teal.", importance=0.3)
    compile_for(tenant, ops, WindowPolicy.default(), "uses-banner")  # the banner reaches a window
    remember("staging database port", "FYI, the staging database port is 5433.")
    remember("queue owner", "FYI, the queue owner is @mira.")
    remember("motto", "The team motto mentions the offsite.", importance=0.3)
    result = read("tr", "c1", "staging database port is 5433.", hours_ago=3)
    out = await call(HYGIENE, agent_in(tenant, "h"), HygieneOut)
    # Past the SLA: the port is confirmed by the fresh read; the owner, the banner and the
    # motto have no fresh evidence and are marked stale; the unused motto also decays.
    assert (out.reverified, out.stale, out.decayed) == (1, 3, 1)
    live = {m.key: m for m in tenant.memories("ops")}
    port = live["staging database port"]
    assert (port.verification, port.source, port.captured_at) == (
        "verified",
        f"events:{result.id}",
        result.event_time,
    )
    assert live["queue owner"].verification == "stale"
    assert "motto" not in live  # unused and unimportant: retired (its row stays)
    assert live["banner"].id == used.id and live["banner"].verification == "stale"  # used: kept
    assert len(tenant.memory_history("ops")) == 5

    # Next round: the stale owner is confirmed by a read that arrived since; nothing else.
    read("tr2", "c2", "queue owner: @mira", hours_ago=1)
    again = await call(HYGIENE, agent_in(tenant, "h2"), HygieneOut)
    assert (again.reverified, again.stale, again.decayed) == (1, 0, 0)
    assert {m.key: m.verification for m in tenant.memories("ops")}["queue owner"] == "verified"


async def test_dreaming_merges_duplicates_across_sessions_and_flags_conflicts(
    tenant: TenantStore, ops: Agent, store: Store, sim: SimulatorServer
) -> None:
    call = caller(store, ops, sim)

    def remember(key: str, text: str, step: str) -> MemoryRecord:
        at = NOW - timedelta(days=1)
        rec = MemoryRecord(
            agent="ops", step_key=step, key=key, text=text, source=step, captured_at=at
        )
        return tenant.remember(rec)

    a = remember("runbook", "The ledger runbook lives in the ops wiki under payments.", "s1:e4")
    b = remember(
        "ledger runbook", "The ledger runbook lives in the ops wiki under payments!", "s2:e9"
    )
    remember("admin port", "The ledger admin port is 8443 on every node.", "s1:e7")
    remember("ledger admin port", "The ledger admin port is 9443 on every node.", "s3:e2")
    policy = POLICY.model_copy(update={"merge_similarity": 0.7})
    out = await call(DREAM, agent_in(tenant, "d", policy), DreamOut)
    assert (out.merged, out.rejected, out.conflicts) == (1, 0, 1)
    live = {m.key: m for m in tenant.memories("ops")}
    merged = live["ledger runbook"]
    assert merged.source == f"merge:memory:{a.id}<s1:e4>+memory:{b.id}<s2:e9>"
    assert "runbook" not in live  # the other duplicate's validity ended; its row stays
    assert len([m for m in tenant.memory_history("ops") if m.key == "runbook"]) == 1
    (conflict,) = [m for m in live.values() if m.key.startswith("delta:conflict:")]
    assert "8443" in conflict.text and "9443" in conflict.text
    again = await call(DREAM, agent_in(tenant, "d2", policy), DreamOut)
    assert again.merged == 0  # nothing left to merge; the conflict is already surfaced


async def test_a_users_memories_and_turns_stay_out_of_agent_wide_consolidation(
    tenant: TenantStore, ops: Agent, store: Store, sim: SimulatorServer
) -> None:
    """Dreaming never merges a user's memory into an agent-wide one nor sets it against one,
    and capture promotes nothing a user's wake said (``wakeful.users``)."""
    call = caller(store, ops, sim)
    at = NOW - timedelta(days=1)

    def remember(key: str, text: str, step: str, user: str | None) -> MemoryRecord:
        rec = MemoryRecord(
            agent="ops", step_key=step, key=key, text=text, source=step, captured_at=at
        )
        return tenant.remember(rec.model_copy(update={"user_id": user}))

    mine = remember(
        "runbook", "The ledger runbook lives in the ops wiki under payments.", "a", "alice"
    )
    remember(
        "ledger runbook", "The ledger runbook lives in the ops wiki under payments!", "b", None
    )
    remember("admin port", "The ledger admin port is 8443 on every node.", "c", "alice")
    remember("ledger admin port", "The ledger admin port is 9443 on every node.", "d", None)
    said = conversation(
        ["Never deploy the ledger on Fridays.", "Noted."],
        session_id="ops:s9",
        start=NOW - timedelta(hours=48),
        step_key="u:",
    )
    tenant.append_events("ops", [e.model_copy(update={"user_id": "alice"}) for e in said])

    policy = POLICY.model_copy(update={"merge_similarity": 0.7})
    out = await call(DREAM, agent_in(tenant, "u", policy), DreamOut)
    assert (out.merged, out.conflicts) == (0, 0)
    live = {m.key: m for m in tenant.memories("ops")}
    assert live["runbook"].id == mine.id and live["runbook"].user_id == "alice"
    assert not any("8443" in m.text for m in live.values() if m.user_id is None)
    await call(CAPTURE, agent_in(tenant, "u2"), CaptureOut)
    assert not any("Fridays" in d.text for d in tenant.all_decisions("ops"))
