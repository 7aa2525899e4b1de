"""The compile activity: gather a point-in-time snapshot, run the pure compiler, store the window.

The window and its ledger go to the substrate (content-addressed); only their hashes return
to the workflow.

Its substrate work is two transactions, not one per read and write: opening the wake (when
asked) and reading the snapshot share one, storing the blobs and the compile record the
other. Each transaction costs a pool checkout, ``BEGIN`` and ``COMMIT`` — round trips that
were most of a compile's time. Retrieval (vector store I/O) runs between them, on no open
transaction.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from temporalio import activity

from wakeful.activities.deps import ActivityDeps
from wakeful.activities.intent_model import classify_cost, intent_classifier
from wakeful.activities.snapshot_hash import snapshot_hash
from wakeful.activities.wake import open_wake, step_key
from wakeful.compiler import CompiledWindow, WindowPolicy, compile_window
from wakeful.compiler.blocks import (
    ON_DEMAND_META,
    AgentProfile,
    Block,
    BlockKind,
    Goal,
    Snapshot,
)
from wakeful.compiler.canonical import canonical_json
from wakeful.compiler.evidence import EVIDENCE_META
from wakeful.compiler.intents import Classified, classify_goal
from wakeful.compiler.ledger import Ledger
from wakeful.compiler.triggers import firing
from wakeful.contracts import (
    COMPILE,
    BreakpointRef,
    CacheTtls,
    CompileIn,
    CompileOut,
    LedgerAnnotations,
    WakeRef,
)
from wakeful.mcp_tools import SEP
from wakeful.skills import LOAD_SKILL, load_skill_schema, spec_with_skills
from wakeful.substrate.indexing import retrieve_into
from wakeful.substrate.records import CompileRecord, EventIn
from wakeful.substrate.registry_repo import EXPIRED_ENTRY, expiry_note
from wakeful.substrate.snapshot import RECENT_PAGE
from wakeful.substrate.sources import BUILTIN_SOURCES, ContextSource, SourceContext, Started, start
from wakeful.substrate.store import TenantStore
from wakeful.substrate.tail_cache import TailCache
from wakeful.tool_results import CAPPED_META, READ_RESULT, read_result_schema
from wakeful.workflows.spend import day_start, has_day_cap


def profile_blocks(
    agent_name: str, tools: list[dict[str, Any]], *, skills: bool = False
) -> list[Block]:
    """The agent's tools, in declaration order (the compiler adds its instructions); for an
    agent with skills the built-in ``load_skill``; and for an agent with tools the built-in
    ``read_result``, which the compiler sends only while a shortened or cleared result is in
    the window (``compiler.clearing``).

    Built from the agent's stored spec, so a past compile can be rebuilt without the code.
    """
    blocks = [
        Block(
            id=f"tool:{tool['name']}",
            kind=BlockKind.TOOL_SCHEMA,
            text=tool["description"],
            source=f"agent:{agent_name}:tools",
            seq=i,
            tool_name=tool["name"],
            tool_input=tool["input_schema"],
            importance=1.0,
        )
        for i, tool in enumerate(tools)
    ]
    if skills and all(t["name"] != LOAD_SKILL for t in tools):
        loader = load_skill_schema()
        blocks.append(
            Block(
                id=f"tool:{LOAD_SKILL}",
                kind=BlockKind.TOOL_SCHEMA,
                text=loader["description"],
                source="wakeful:tools",
                seq=len(blocks),
                tool_name=LOAD_SKILL,
                tool_input=loader["input_schema"],
                importance=1.0,
            )
        )
    if blocks and all(t["name"] != READ_RESULT for t in tools):
        reader = read_result_schema()
        blocks.append(
            Block(
                id=f"tool:{READ_RESULT}",
                kind=BlockKind.TOOL_SCHEMA,
                text=reader["description"],
                source="wakeful:tools",
                seq=len(blocks),
                tool_name=READ_RESULT,
                tool_input=reader["input_schema"],
                importance=1.0,
                meta={ON_DEMAND_META: "1"},
            )
        )
    return blocks


def with_tool_facts(events: list[Block], tools: list[dict[str, Any]]) -> list[Block]:
    """Each tool result as its tool describes it (``Tool.spec``): good until ``fresh_for_s``
    after it was recorded, and ``authoritative`` when the tool is the source of truth. The
    compiler acts on both (``compiler.live_output``, ``compiler.dedupe``)."""
    facts = {
        t["name"]: (t.get("fresh_for_s"), bool(t.get("authoritative")))
        for t in tools
        if t.get("fresh_for_s") is not None or t.get("authoritative")
    }
    if not facts:
        return events
    out = []
    for b in events:
        fact = facts.get(b.tool_name or "") if b.kind is BlockKind.TOOL_RESULT else None
        if fact is not None:
            fresh_for, authoritative = fact
            update: dict[str, Any] = {"authoritative": authoritative}
            if fresh_for is not None and b.captured_at is not None:
                update["stale_after"] = b.captured_at + timedelta(seconds=fresh_for)
            b = b.model_copy(update=update)
        out.append(b)
    return out


CONTEXT_BLOCKS = "context_blocks"  # a compile's spec: what the agent's own sources gave


def gather_snapshot(
    ts: TenantStore,
    spec: dict[str, Any],
    *,
    session_id: str | None,
    wake_id: str | None,
    max_event_id: int,
    as_of: datetime,
    recent_limit: int,
    recent_page: int = RECENT_PAGE,
    retrieved: Sequence[Block] = (),
    revision: int | None = None,
    tail_cache: TailCache | None = None,
    policy: WindowPolicy | None = None,
    sources: Sequence[ContextSource] = (),
) -> tuple[Snapshot, Started]:
    """The compiler's input for one call from the agent's spec and the built-in context
    sources (``substrate.sources``), and its own ``sources`` still running: the caller
    waits for them (after its transaction, if it holds one), adds their blocks with
    :func:`with_own` and stores them with the spec (``spec["context_blocks"]``), where a
    replay's spec brings them back instead of the sources being asked again.

    ``retrieved`` are retrieval candidates gathered for this call (or stored with it);
    ``revision`` the agent's knowledge revision to read at (None: as it stands now);
    ``tail_cache`` keeps the raw tail between compiles (:mod:`wakeful.substrate.tail_cache`);
    ``policy`` names the skills its triggers may inject.
    """
    name = spec["name"]
    ctx = SourceContext(
        store=ts,
        agent=name,
        spec=spec,
        max_event_id=max_event_id,
        as_of=as_of,
        current_wake_id=wake_id,
        session_id=session_id,
        revision=revision,
        policy=policy,
        recent_limit=recent_limit,
        recent_page=recent_page,
        tail_cache=tail_cache,
    )
    events, started = start((*BUILTIN_SOURCES, *sources), ctx)
    stored = [Block.model_validate(b) for b in spec.get(CONTEXT_BLOCKS, ())]
    tools = list(spec["tools"])
    events = with_tool_facts(events, tools)
    if not tools and any(CAPPED_META in b.meta for b in events):  # (tools since removed)
        tools = [read_result_schema()]
    blocks = profile_blocks(name, tools, skills=bool(spec.get("skills")))
    blocks += events + stored
    blocks += retrieved
    snapshot = Snapshot(
        agent=AgentProfile(
            tenant=ts.name,
            name=name,
            model=spec["model"],
            provider=spec["provider"],
            instructions=spec["instructions"],
            tool_choice=spec.get("tool_choice"),
        ),
        as_of=as_of,
        session_id=session_id,
        current_wake_id=wake_id,
        blocks=tuple(blocks),
    )
    return snapshot, started


def with_own(snapshot: Snapshot, own: Sequence[Block]) -> Snapshot:
    """The snapshot with the blocks of the agent's own sources, after the substrate's (as
    a replay finds them, stored with the spec), before any retrieved."""
    if not own:
        return snapshot
    blocks = snapshot.blocks
    n = next((i for i, b in enumerate(blocks) if b.kind is BlockKind.RETRIEVED), len(blocks))
    return snapshot.model_copy(update={"blocks": (*blocks[:n], *own, *blocks[n:])})


def build_snapshot(
    ts: TenantStore,
    spec: dict[str, Any],
    *,
    session_id: str | None,
    wake_id: str | None,
    max_event_id: int,
    as_of: datetime,
    recent_limit: int,
    recent_page: int = RECENT_PAGE,
    retrieved: Sequence[Block] = (),
    revision: int | None = None,
    tail_cache: TailCache | None = None,
    policy: WindowPolicy | None = None,
) -> Snapshot:
    """The compiler's input for one call from the built-in sources and the spec (as a
    replay rebuilds it: see :func:`gather_snapshot`)."""
    snapshot, started = gather_snapshot(
        ts,
        spec,
        session_id=session_id,
        wake_id=wake_id,
        max_event_id=max_event_id,
        as_of=as_of,
        recent_limit=recent_limit,
        recent_page=recent_page,
        retrieved=retrieved,
        revision=revision,
        tail_cache=tail_cache,
        policy=policy,
    )
    started.close()  # no sources of its own were given
    return snapshot


class CompileActivities:
    def __init__(self, deps: ActivityDeps) -> None:
        self.deps = deps

    @activity.defn(name=COMPILE)
    def compile(self, inp: CompileIn) -> CompileOut:
        """Compile one window; open the wake first when asked (``CompileIn.open``)."""
        wake = inp.wake
        ts = self.deps.store.tenant(wake.tenant)
        key = step_key(wake, inp.call_index, "compile")
        agent = self.deps.agents.get(wake.tenant, wake.agent)
        spec = agent.spec()
        if agent.mcp_servers:  # its MCP tools join the spec: the same list all wake long
            spec["tools"] = spec["tools"] + self.deps.mcp.wake_tools(
                agent, (wake.tenant, wake.wake_id), lambda: wake_mcp_tools(ts, wake.wake_id)
            )
        skills = self.deps.skills_for(agent)
        spec = spec_with_skills(spec, skills)
        policy = self.deps.policy(inp.runtime.policy, inp.ttls)
        with ts.unit() as uow:
            here = ts.within(uow)  # for the helpers written against the store's methods
            if inp.open is not None:
                open_wake(here, inp.open)
            # Decisions past their expiry are retired by this compile and named in its
            # ledger (``registry.expired``): a rule never leaves the window unannounced.
            expired = uow.registry.expire_decisions(wake.agent, inp.now, step=key)
            # The revision first: knowledge committed while the snapshot reads is newer
            # than it, so the snapshot leaves it out now and a replay leaves it out again.
            revision = uow.knowledge.knowledge_revision(wake.agent)
            max_event_id = uow.events.max_event_id(wake.agent)
            snapshot, started = gather_snapshot(
                here,
                spec,
                session_id=wake.session_id,
                wake_id=wake.wake_id,
                max_event_id=max_event_id,
                as_of=inp.now,
                recent_limit=self.deps.recent_limit,
                revision=revision,
                tail_cache=self.deps.tail_cache,
                policy=policy,
                sources=(*self.deps.context_sources, *agent.context_sources),
            )
            # Read only for an agent with a daily cap: the cycle checks it before the call.
            spent = (
                uow.wakes.spend_since(wake.agent, day_start(inp.now))
                if has_day_cap(inp.runtime)
                else None
            )
        # The agent's own sources, waited for once the transaction has committed; stored
        # with the spec, whence a replay reads them back.
        own = started.blocks(snapshot.blocks)
        if own:
            snapshot = with_own(snapshot, own)
            spec[CONTEXT_BLOCKS] = [b.model_dump(mode="json") for b in own]
        # A goal that came without intents is classified first, so the intent triggers
        # can fire; the compile record keeps the goal as classified, and a recompile reads
        # it from there rather than classifying again.
        classifier = intent_classifier(
            self.deps, ts, agent, policy, wake_key=step_key(wake, "intents"), compile_key=key
        )
        classified = classify_goal(inp.goal, policy, classifier)
        goal = inp.goal if classified is None else classified.goal
        retrieval_hash = None
        index = self.deps.event_index()
        if index is not None:
            # Retrieval is a compiler input: candidates join the snapshot, the compiler
            # decides; the hits are stored so a replay uses the same ones.
            with self.deps.telemetry.retrieval_span(
                wake.agent, "wakeful.events", wake=(wake.tenant, wake.wake_id), query=goal.text
            ):
                snapshot, retrieval_hash = retrieve_into(
                    index,
                    ts,
                    snapshot,
                    goal_text=goal.text,
                    policy=policy,
                    max_event_id=max_event_id,
                    max_tokens=self.deps.retrieval_max_tokens,
                    call_index=inp.call_index,
                )
        telemetry = self.deps.telemetry
        with telemetry.compile_span(wake.agent, wake.wake_id, tenant=wake.tenant) as span:
            with self.deps.compile_lock:
                window = compile_window(
                    snapshot,
                    goal,
                    policy,
                    inp.now,
                    counter=self.deps.counter,
                    cache=self.deps.cache,
                )
            telemetry.record_compile(window, agent=wake.agent, span=span)
        ledger = annotate(window.ledger, inp.annotations, inp.ttls)
        ledger = routing_decisions(ledger, policy, goal, classified)
        if expired:
            ledger = ledger.with_decision(EXPIRED_ENTRY, expiry_note(expired))
        digest = snapshot_hash(snapshot, memo=self.deps.block_hashes)  # before the tx opens
        blobs = [
            ("window", window.request_json),
            ("ledger", ledger.model_dump_json()),
            ("policy", policy.model_dump_json()),
            ("spec", canonical_json(spec)),
        ]
        with ts.unit() as uow:
            window_hash, ledger_hash, policy_hash, spec_hash = uow.blobs.put_blobs(blobs)
            if window.evidence_text:
                evidence = evidence_event(wake, inp.call_index, window, inp.now)
                uow.events.append_events(wake.agent, [evidence])
            rec = uow.wakes.record_compile(
                CompileRecord(
                    agent=wake.agent,
                    wake_id=wake.wake_id,
                    step_key=key,
                    call_index=inp.call_index,
                    as_of=inp.now,
                    max_event_id=max_event_id,
                    goal=goal.model_dump(mode="json"),
                    policy_hash=policy_hash,
                    snapshot_hash=digest,
                    window_hash=window_hash,
                    ledger_hash=ledger_hash,
                    stable_prefix_hash=window.stable_prefix_hash,
                    input_tokens=window.input_tokens,
                    tokens_by_bucket=dict(window.tokens_by_bucket),
                    retrieval_hash=retrieval_hash,
                    revision=revision,
                    spec_hash=spec_hash,
                    recent_limit=self.deps.recent_limit,
                )
            )
        if rec.window_hash == window_hash:  # committed: the model call may take it from here
            self.deps.windows.put(window_hash, window.request_json)
        # A retry after a crash returns the first compile, so the model sees one window.
        used = ledger if rec.ledger_hash == ledger_hash else stored_ledger(ts, rec.ledger_hash)
        # Only what the workflow reads: the result is written into its history every call
        # (the stable prefix hash and the event horizon are in the compile record).
        return CompileOut(
            window_hash=rec.window_hash,
            input_tokens=rec.input_tokens,
            breakpoints=breakpoint_refs(used),
            fresh_tokens=used.fresh_session_tokens(policy.retrieval.max_tokens),
            spent_today_usd=None if spent is None else spent.usd,
            spent_today_tokens=None if spent is None else spent.tokens,
            consolidate=policy.budget.consolidates(rec.tokens_by_bucket.get("recent", 0)),
            intents_cost_usd=classify_cost(classifier),
        )


def wake_mcp_tools(ts: TenantStore, wake_id: str) -> list[dict[str, Any]] | None:
    """The MCP tools an earlier compile of the wake used (from its stored spec), so that a
    compile on another worker, or after a restart, sends the same tools (None: no compile
    of the wake has been recorded yet)."""
    earlier = [c for c in ts.compiles(wake_id) if c.spec_hash]
    if not earlier:
        return None
    first = min(earlier, key=lambda c: c.call_index)
    spec = json.loads(ts.get_blob(first.spec_hash or ""))
    prefixes = tuple(f"{s['name']}{SEP}" for s in spec.get("mcp_servers", ()))
    return [t for t in spec["tools"] if prefixes and t["name"].startswith(prefixes)]


def evidence_event(wake: WakeRef, call_index: int, window: CompiledWindow, at: datetime) -> EventIn:
    """The evidence a window brought, as an event of its wake (see ``compiler.place``).

    Appended with the compile record (the step key is the call's): a retried compile finds
    it there, and the wake's later calls, and later wakes, send it again as this text,
    where this call put it.
    """
    return EventIn(
        step_key=step_key(wake, call_index, "evidence"),
        kind="evidence",
        role="user",
        text=window.evidence_text,
        session_id=wake.session_id,
        wake_id=wake.wake_id,
        event_time=at,
        meta={EVIDENCE_META: " ".join(window.evidence_blocks)},
    )


def annotate(
    ledger: Ledger, annotations: LedgerAnnotations | None, ttls: CacheTtls | None = None
) -> Ledger:
    """Attach the orchestrator's decisions (e.g. pacing and its prices) to the ledger."""
    if ttls is not None and ttls.why:
        ledger = ledger.with_decision("pacing.cache_ttl", ttls.why)
    if annotations is None:
        return ledger
    for key, value in sorted(annotations.decisions.items()):
        ledger = ledger.with_decision(key, value)
    for note in annotations.notes:
        ledger = ledger.with_note(note)
    return ledger


def routing_decisions(
    ledger: Ledger, policy: WindowPolicy, goal: Goal, classified: Classified | None
) -> Ledger:
    """Record how the goal was routed: the intents a classifier gave it
    (``intents.classified``) and the policy's triggers that fired (``triggers.fired``, in
    precedence order; ``none`` when the policy has triggers and none matched)."""
    if classified is not None:
        ledger = ledger.with_decision("intents.classified", classified.note())
    if policy.triggers:
        fired = ", ".join(t.name for t in firing(policy.triggers, goal)) or "none"
        ledger = ledger.with_decision("triggers.fired", fired)
    return ledger


def stored_ledger(ts: TenantStore, digest: str) -> Ledger:
    return Ledger.model_validate_json(ts.get_blob(digest))


def breakpoint_refs(ledger: Ledger) -> tuple[BreakpointRef, ...]:
    """The window's cache breakpoints, for the orchestrator's cache clock."""
    return tuple(
        BreakpointRef(name=b.name, ttl=b.ttl, prefix_tokens=b.prefix_tokens)
        for b in ledger.breakpoints
    )
