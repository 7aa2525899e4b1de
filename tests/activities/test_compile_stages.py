"""The compile activity's stages one by one, against a real Postgres, and the activity as
their sequence: one span per stage, in order, and the record its stages wrote."""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.testing import ActivityEnvironment

from tests.activities.test_model_activity import T0, _wake, statements
from wakeful.activities.compile import CompileActivities
from wakeful.activities.compile_stages import (
    STAGES,
    ask_query_sources,
    classify_goal,
    compile_pure,
    load_snapshot,
    prepare_wake,
    record,
)
from wakeful.activities.deps import ActivityDeps
from wakeful.activities.snapshot_input import CONTEXT_BLOCKS
from wakeful.activities.wake import step_key
from wakeful.agents import Agent, AgentRegistry, Tool, ToolContext
from wakeful.compiler import EstimatingCounter
from wakeful.compiler.blocks import Block, BlockKind, Goal, GoalKind, Stability
from wakeful.compiler.policy import IntentRule, WindowPolicy
from wakeful.contracts import CompileIn, LedgerAnnotations, WakeRef
from wakeful.substrate.query_sources import QueryContext
from wakeful.substrate.records import DecisionRecord, MemoryRecord, Spend
from wakeful.substrate.sources import SourceContext
from wakeful.substrate.store import Store, TenantStore
from wakeful.telemetry import TelemetrySettings, setup_telemetry

OPS = WindowPolicy.default().model_copy(
    update={"intents": (IntentRule(name="deploy", patterns=("deploy",)),)}
)


def _ping(args: dict[str, object], ctx: ToolContext) -> str:
    return "pong"


PING = Tool(
    name="ping", description="Ping.", input_schema={"type": "object", "properties": {}}, fn=_ping
)


@dataclass
class Environment:
    """An agent's own context source (no substrate): the deployment's state."""

    name: str = "environment"
    stability: Stability = Stability.DYNAMIC
    substrate: bool = False

    def blocks(self, ctx: SourceContext) -> Sequence[Block]:
        return [
            Block(
                id="env:state",
                kind=BlockKind.TASK_FRAME,
                text="api: 3 replicas",
                source="environment",
            )
        ]


@dataclass
class Runbook:
    """An agent's own query source: a page per intent of the goal."""

    name: str = "runbook"
    stability: Stability = Stability.DYNAMIC
    asked: list[QueryContext] = field(default_factory=list)

    def blocks(self, ctx: QueryContext) -> Sequence[Block]:
        self.asked.append(ctx)
        return [
            Block(
                id=f"runbook:{i}",
                kind=BlockKind.TASK_FRAME,
                text=f"Runbook for {i}.",
                source="runbook",
            )
            for i in ctx.goal.intents
        ]


def _deps(store: Store, agent: Agent) -> ActivityDeps:
    return ActivityDeps(
        store=store,
        agents=AgentRegistry([agent]),
        providers=lambda _name: None,  # type: ignore[arg-type,return-value]
        counter=EstimatingCounter(),
        policies={"ops": OPS},
    )


def _agent(tenant: TenantStore, **kw: object) -> Agent:
    return Agent(
        name="a1",
        instructions="Keep the api up.",
        tenant=tenant.name,
        model="claude-sonnet-4-6",
        tools=(PING,),
        policy="ops",
        **kw,  # type: ignore[arg-type]
    )


def _inp(
    agent: Agent,
    wake: WakeRef,
    *,
    annotations: LedgerAnnotations | None = None,
    reminder: str | None = None,
) -> CompileIn:
    return CompileIn(
        wake=wake,
        runtime=agent.runtime(),
        goal=Goal(kind=GoalKind.MESSAGE, text="please deploy the api"),
        call_index=0,
        now=T0,
        annotations=annotations,
        reminder=reminder,
    )


def test_prepare_wake_gives_the_agents_spec_and_its_policy(
    store: Store, tenant: TenantStore
) -> None:
    agent = _agent(tenant)
    deps = _deps(store, agent)
    prepared = prepare_wake(deps, tenant, _inp(agent, _wake(tenant)))
    assert prepared.agent is agent
    assert [t["name"] for t in prepared.spec["tools"]] == ["ping"]
    assert prepared.spec["instructions"] == "Keep the api up."
    assert prepared.policy.intents == OPS.intents


def test_load_snapshot_records_the_reminder_retires_expired_decisions_and_adds_own_blocks(
    store: Store, tenant: TenantStore
) -> None:
    agent = _agent(tenant, context_sources=(Environment(),))
    deps = _deps(store, agent)
    wake = _wake(tenant)
    tenant.register_decision(
        DecisionRecord(
            decision_id="DEC-1", agent="a1", text="Freeze.", expires_at=T0 - timedelta(hours=1)
        )
    )
    inp = _inp(agent, wake, reminder="Answer with the tool.")
    prepared = prepare_wake(deps, tenant, inp)
    loaded = load_snapshot(deps, tenant, inp, prepared)

    (reminder,) = [e for e in tenant.events("a1") if e.text == "Answer with the tool."]
    assert reminder.step_key == step_key(wake, 0, "reminder")
    assert loaded.max_event_id == reminder.id
    assert [d.decision_id for d in loaded.expired] == ["DEC-1"]
    assert tenant.decision("a1", "DEC-1").retired_at is not None
    assert loaded.revision == tenant.knowledge_revision("a1")  # read after the expiry
    assert "env:state" in [b.id for b in loaded.snapshot.blocks]
    assert [b["id"] for b in prepared.spec[CONTEXT_BLOCKS]] == ["env:state"]
    assert loaded.spent is None  # no daily cap: not read

    capped = _agent(tenant, max_usd_per_day=5.0)
    again = _inp(capped, wake)
    loaded = load_snapshot(_deps(store, capped), tenant, again, prepare_wake(deps, tenant, again))
    assert loaded.spent == Spend(usd=0.0, tokens=0)


def test_load_snapshot_reads_no_kind_of_knowledge_the_agent_has_none_of(
    store: Store, tenant: TenantStore
) -> None:
    """The statement that reads the revision says which kinds of knowledge the agent has
    no row of; the snapshot does not read those (a row written since is of a later
    revision, which it would leave out). The kinds it has are read as ever."""
    agent = _agent(tenant)
    deps = _deps(store, agent)
    wake = _wake(tenant)
    tenant.remember(
        MemoryRecord(
            agent="a1",
            step_key="m1",
            key="k",
            text="The api runs on port 8080.",
            source="test",
            captured_at=T0 - timedelta(hours=1),
        )
    )
    inp = _inp(agent, wake)
    prepared = prepare_wake(deps, tenant, inp)
    with statements(store) as sent:
        loaded = load_snapshot(deps, tenant, inp, prepared)
    read = {
        name
        for name in ("decisions", "handoff_notes", "summaries", "memories")
        if any(s.startswith(f"SELECT {name}.") for s in sent)  # a read of its rows
    }
    assert read == {"memories"}, sent
    assert "The api runs on port 8080." in [b.text for b in loaded.snapshot.blocks]


def test_classify_goal_names_the_intents_by_the_policys_rules(
    store: Store, tenant: TenantStore
) -> None:
    agent = _agent(tenant)
    deps = _deps(store, agent)
    inp = _inp(agent, _wake(tenant))
    routed = classify_goal(deps, tenant, inp, prepare_wake(deps, tenant, inp))
    assert routed.goal == inp.goal.model_copy(update={"intents": ("deploy",)})
    assert routed.classified is not None and routed.classified.intents == ("deploy",)
    assert routed.classified.classifier == "rules"
    assert routed.classifier is None  # the policy's rules: no model, nothing to pay

    given = inp.model_copy(update={"goal": inp.goal.model_copy(update={"intents": ("x",)})})
    kept = classify_goal(deps, tenant, given, prepare_wake(deps, tenant, given))
    assert kept.goal == given.goal and kept.classified is None


def test_ask_query_sources_adds_their_blocks_for_the_goal_and_stores_them_with_the_spec(
    store: Store, tenant: TenantStore
) -> None:
    runbook = Runbook()
    agent = _agent(tenant, query_sources=(runbook,))
    deps = _deps(store, agent)
    inp = _inp(agent, _wake(tenant))
    prepared = prepare_wake(deps, tenant, inp)
    loaded = load_snapshot(deps, tenant, inp, prepared)
    goal = classify_goal(deps, tenant, inp, prepared).goal
    asked = ask_query_sources(deps, tenant, inp, prepared, loaded, goal)
    (ctx,) = runbook.asked
    assert ctx.goal == goal and ctx.max_event_id == loaded.max_event_id
    assert asked.snapshot.blocks[: len(loaded.snapshot.blocks)] == loaded.snapshot.blocks
    assert [b.id for b in asked.snapshot.blocks[len(loaded.snapshot.blocks) :]] == [
        "runbook:deploy"
    ]
    assert [b["id"] for b in prepared.spec["query_blocks"]] == ["runbook:deploy"]
    assert asked.retrieval_hash is None  # no vector store: no retrieval


def test_compile_pure_compiles_the_same_window_twice_and_annotates_its_ledger(
    store: Store, tenant: TenantStore
) -> None:
    agent = _agent(tenant)
    deps = _deps(store, agent)
    notes = LedgerAnnotations(decisions={"pacing.price": "cheap"}, notes=("paced",))
    inp = _inp(agent, _wake(tenant), annotations=notes)
    prepared = prepare_wake(deps, tenant, inp)
    loaded = load_snapshot(deps, tenant, inp, prepared)
    routed = classify_goal(deps, tenant, inp, prepared)
    expired = [DecisionRecord(decision_id="DEC-9", agent="a1", text="Old.", expires_at=T0)]
    first = compile_pure(deps, inp, loaded.snapshot, prepared.policy, routed, expired)
    again = compile_pure(deps, inp, loaded.snapshot, prepared.policy, routed, expired)
    assert first.window.request_json == again.window.request_json
    assert "please deploy the api" in first.window.request_json
    decisions = dict(first.ledger.decisions)
    assert decisions["pacing.price"] == "cheap"
    assert decisions["intents.classified"] == routed.classified.note()  # type: ignore[union-attr]
    assert decisions["registry.expired"].startswith("DEC-9")
    assert "paced" in first.ledger.notes


def test_record_stores_the_window_once_and_a_retry_gets_the_first_ledger(
    store: Store, tenant: TenantStore
) -> None:
    agent = _agent(tenant)
    deps = _deps(store, agent)
    wake = _wake(tenant)
    inp = _inp(agent, wake)
    prepared = prepare_wake(deps, tenant, inp)
    loaded = load_snapshot(deps, tenant, inp, prepared)
    routed = classify_goal(deps, tenant, inp, prepared)
    asked = ask_query_sources(deps, tenant, inp, prepared, loaded, routed.goal)
    compiled = compile_pure(deps, inp, asked.snapshot, prepared.policy, routed, [])
    recorded = record(deps, tenant, inp, prepared, loaded, routed, asked, compiled)

    (rec,) = tenant.compiles(wake.wake_id)
    assert rec == recorded.record and recorded.ledger == compiled.ledger
    assert tenant.get_blob(rec.window_hash) == compiled.window.request_json
    assert deps.windows.get(rec.window_hash) == compiled.window.request_json
    assert deps.compiles.get((tenant.name, wake.wake_id, 0)) == rec  # for its model call
    assert rec.step_key == step_key(wake, 0, "compile") and rec.goal["intents"] == ["deploy"]
    assert json.loads(tenant.get_blob(rec.spec_hash or ""))["tools"][0]["name"] == "ping"

    # A retry whose compile came out otherwise returns the first record and its ledger.
    other = replace(compiled, ledger=compiled.ledger.with_note("a retry's"))
    retried = record(deps, tenant, inp, prepared, loaded, routed, asked, other)
    assert retried.record == rec and retried.ledger == compiled.ledger
    assert len(tenant.compiles(wake.wake_id)) == 1
    assert deps.compiles.get((tenant.name, wake.wake_id, 0)) == rec


def test_a_compile_runs_its_stages_in_order_each_in_its_span(
    store: Store, tenant: TenantStore
) -> None:
    agent = _agent(tenant, query_sources=(Runbook(),))
    spans = InMemorySpanExporter()
    telemetry = setup_telemetry(TelemetrySettings(), span_exporter=spans)
    deps = replace(_deps(store, agent), telemetry=telemetry)
    wake = _wake(tenant)
    out = ActivityEnvironment().run(CompileActivities(deps).compile, _inp(agent, wake))
    telemetry.shutdown()

    finished = sorted(spans.get_finished_spans(), key=lambda s: s.start_time or 0)
    stages = [s for s in finished if s.name.startswith("wakeful.compile.")]
    assert [s.name for s in stages] == [f"wakeful.compile.{n}" for n in STAGES]
    for before, after in itertools.pairwise(stages):
        assert (before.end_time or 0) <= (after.start_time or 0)
    (inner,) = [s for s in finished if s.name == "wakeful.compile a1"]
    compile_stage = stages[STAGES.index("compile")]
    assert (compile_stage.start_time or 0) <= (inner.start_time or 0)
    assert (inner.end_time or 0) <= (compile_stage.end_time or 0)
    assert {dict(s.attributes or {})["wakeful.wake_id"] for s in stages} == {wake.wake_id}

    (rec,) = tenant.compiles(wake.wake_id)
    assert out.window_hash == rec.window_hash and out.input_tokens == rec.input_tokens
    assert "Runbook for deploy." in tenant.get_blob(rec.window_hash)
    assert out.intents_cost_usd == 0.0 and out.spent_today_usd is None
