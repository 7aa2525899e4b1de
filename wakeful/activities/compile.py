"""The compile activity: gather a point-in-time snapshot, run the pure compiler, store the window.

The window and its ledger go to the substrate (content-addressed); only their hashes return
to the workflow.

Its substrate work is two transactions, not one per read and write: opening the wake (when
asked) and reading the snapshot share one, storing the blobs and the compile record the
other. Each transaction costs a pool checkout, ``BEGIN`` and ``COMMIT`` — round trips that
were most of a compile's time. The agent's own context sources, and the query sources
(retrieval: vector store I/O), run between them, on no open transaction.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from temporalio import activity

from wakeful.activities.deps import ActivityDeps
from wakeful.activities.intent_model import classify_cost, intent_classifier
from wakeful.activities.snapshot_hash import snapshot_hash
from wakeful.activities.snapshot_input import (
    CONTEXT_BLOCKS,
    ask_query_sources,
    gather_snapshot,
    with_own,
)
from wakeful.activities.wake import open_wake, step_key
from wakeful.compiler import CompiledWindow, WindowPolicy, compile_window
from wakeful.compiler.blocks import (
    Goal,
)
from wakeful.compiler.canonical import canonical_json
from wakeful.compiler.evidence import EVIDENCE_HASHES_META, EVIDENCE_META
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
from wakeful.skills import spec_with_skills
from wakeful.substrate.query_sources import EventRetrieval
from wakeful.substrate.records import CompileRecord, EventIn
from wakeful.substrate.registry_repo import EXPIRED_ENTRY, expiry_note
from wakeful.substrate.store import TenantStore
from wakeful.workflows.spend import day_start, has_day_cap


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
            if inp.reminder is not None:  # idempotent on its step key, like every write
                here.append_events(
                    wake.agent,
                    [
                        EventIn(
                            step_key=step_key(wake, inp.call_index, "reminder"),
                            kind="turn",
                            role="user",
                            text=inp.reminder,
                            session_id=wake.session_id,
                            wake_id=wake.wake_id,
                            event_time=inp.now,
                        )
                    ],
                )
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
        # The query sources (retrieval, then the agent's own) add candidates for the goal,
        # the compiler decides; what they gave is stored so a replay uses the same.
        telemetry = self.deps.telemetry
        index = self.deps.event_index()
        retrieval = (
            None
            if index is None
            else EventRetrieval(
                index,
                self.deps.retrieval_max_tokens,
                span=lambda q: telemetry.retrieval_span(
                    wake.agent, "wakeful.events", wake=(wake.tenant, wake.wake_id), query=q
                ),
            )
        )
        snapshot = ask_query_sources(
            ts,
            snapshot,
            spec,
            retrieval=retrieval,
            own=(*self.deps.query_sources, *agent.query_sources),
            goal=goal,
            policy=policy,
            call_index=inp.call_index,
            max_event_id=max_event_id,
        )
        retrieval_hash = None if retrieval is None else retrieval.digest
        with telemetry.compile_span(wake.agent, wake.wake_id, tenant=wake.tenant) as span:
            with self.deps.compile_locks(wake.tenant, wake.agent):
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
        meta={
            EVIDENCE_META: " ".join(window.evidence_blocks),
            EVIDENCE_HASHES_META: " ".join(window.evidence_hashes),
        },
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
