"""The stages of the compile activity, in the order it runs them.

:func:`prepare_wake` (the agent's spec with its MCP tools and skills, and the policy),
:func:`load_snapshot` (open the wake, retire expired decisions, read the snapshot: one
transaction), :func:`classify_goal` (which may ask a model), :func:`ask_query_sources`
(retrieval and the agent's own), :func:`compile_pure` (the compiler and the ledger's
annotations: no I/O) and :func:`record` (the blobs and the compile record: the second
transaction). Each runs in a span of its own (``wakeful.compile.{stage}``) through
:func:`stage`.

The spec is one dict from :func:`prepare_wake` on: the stages that ask sources add what
those gave to it (``context_blocks``, ``query_blocks``), and :func:`record` stores it,
whence a replay reads them back.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from wakeful.activities import snapshot_input
from wakeful.activities.deps import ActivityDeps
from wakeful.activities.intent_model import intent_classifier
from wakeful.activities.snapshot_hash import snapshot_hash
from wakeful.activities.snapshot_input import CONTEXT_BLOCKS, gather_snapshot, with_own
from wakeful.activities.wake import open_wake, step_key
from wakeful.agents import Agent
from wakeful.compiler import CompiledWindow, WindowPolicy, compile_window, intents
from wakeful.compiler.blocks import Goal, Snapshot
from wakeful.compiler.canonical import canonical_json
from wakeful.compiler.evidence import EVIDENCE_HASHES_META, EVIDENCE_META
from wakeful.compiler.intents import Classified, IntentClassifier
from wakeful.compiler.ledger import Ledger
from wakeful.compiler.policy import Failover, ModelRoute
from wakeful.compiler.triggers import firing
from wakeful.contracts import (
    BreakpointRef,
    CacheTtls,
    CompileIn,
    LedgerAnnotations,
    WakeRef,
)
from wakeful.mcp_tools import SEP
from wakeful.skills import spec_with_skills
from wakeful.substrate.query_sources import EventRetrieval
from wakeful.substrate.records import CompileRecord, DecisionRecord, EventIn, Spend
from wakeful.substrate.registry_repo import EXPIRED_ENTRY, expiry_note
from wakeful.substrate.sources import USER_SCOPE
from wakeful.substrate.store import TenantStore
from wakeful.users import scope_label
from wakeful.workflows.spend import day_start, has_day_cap

STAGES = (
    "prepare_wake",
    "load_snapshot",
    "classify_goal",
    "ask_query_sources",
    "compile",
    "record",
)


@contextmanager
def stage(deps: ActivityDeps, name: str, wake: WakeRef) -> Iterator[None]:
    """Run a stage of ``wake``'s compile in its span, ``wakeful.compile.{name}``."""
    with deps.telemetry.compile_stage_span(name, wake.agent, wake.wake_id, tenant=wake.tenant):
        yield


@dataclass(frozen=True)
class Prepared:
    """What a compile of the wake works with: its agent, spec and policy."""

    agent: Agent
    spec: dict[str, Any]
    policy: WindowPolicy


@dataclass(frozen=True)
class Loaded:
    """The snapshot as of the compile, the agent's own context sources' blocks in it, and
    what the same transaction read with it."""

    snapshot: Snapshot
    revision: int
    max_event_id: int
    expired: list[DecisionRecord]
    spent: Spend | None  # None: the agent has no daily cap


@dataclass(frozen=True)
class Routed:
    """The goal as the compiler takes it: as classified, when a classifier named intents."""

    goal: Goal
    classified: Classified | None
    classifier: IntentClassifier | None  # whose model call, if any, the compile paid for


@dataclass(frozen=True)
class Asked:
    """The snapshot with the query sources' blocks, and the retrieval's hash (None: no
    retrieval configured)."""

    snapshot: Snapshot
    retrieval_hash: str | None


@dataclass(frozen=True)
class Compiled:
    """The window, and its ledger with the compile's decisions added."""

    window: CompiledWindow
    ledger: Ledger
    failover: Failover | None = None


@dataclass(frozen=True)
class Recorded:
    """The compile record, and the ledger of the window it names: the first compile's on
    a retry, so the model sees one window."""

    record: CompileRecord
    ledger: Ledger


def prepare_wake(deps: ActivityDeps, ts: TenantStore, inp: CompileIn) -> Prepared:
    """The agent's spec, with its MCP tools and its skills, and the compile's policy."""
    wake = inp.wake
    agent = deps.agents.get(wake.tenant, wake.agent)
    spec = agent.spec()
    if agent.mcp_servers:  # its MCP tools join the spec: the same list all wake long
        spec["tools"] = spec["tools"] + deps.mcp.wake_tools(
            agent, (wake.tenant, wake.wake_id), lambda: wake_mcp_tools(ts, wake.wake_id)
        )
    spec = spec_with_skills(spec, deps.skills_for(agent))
    if wake.user is not None:  # the scope the sources read in, kept with the compile
        spec[USER_SCOPE] = wake.user
    return Prepared(agent=agent, spec=spec, policy=deps.policy(inp.runtime.policy, inp.ttls))


def load_snapshot(
    deps: ActivityDeps, ts: TenantStore, inp: CompileIn, prepared: Prepared
) -> Loaded:
    """In one transaction: open the wake when asked, record the reminder, retire the
    decisions past their expiry, read the snapshot (and the day's spend, for an agent with
    a daily cap); then add the agent's own context sources' blocks, waited for once the
    transaction has committed, to the snapshot and the spec."""
    wake, spec = inp.wake, prepared.spec
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
                        user_id=wake.user,
                    )
                ],
            )
        # Decisions past their expiry are retired by this compile and named in its
        # ledger (``registry.expired``): a rule never leaves the window unannounced.
        # Then the revision and the event horizon, at one point in time (with the check
        # for due decisions, one statement when none is): knowledge committed while the
        # snapshot reads is newer than the revision, so the snapshot leaves it out now
        # and a replay leaves it out again.
        expired, bounds = uow.registry.expire_then_horizon(
            wake.agent, inp.now, step=step_key(wake, inp.call_index, "compile")
        )
        revision, max_event_id = bounds.revision, bounds.max_event_id
        snapshot, started = gather_snapshot(
            here,
            spec,
            session_id=wake.session_id,
            wake_id=wake.wake_id,
            max_event_id=max_event_id,
            as_of=inp.now,
            recent_limit=deps.recent_limit,
            revision=revision,
            tail_cache=deps.tail_cache,
            policy=prepared.policy,
            sources=(*deps.context_sources, *prepared.agent.context_sources),
            last_retired=bounds.last_retired,
            without=bounds.without,
        )
        # Read only for an agent with a daily cap: the cycle checks it before the call.
        spent = (
            uow.wakes.spend_since(wake.agent, day_start(inp.now))
            if has_day_cap(inp.runtime)
            else None
        )
    own = started.blocks(snapshot.blocks)
    if own:
        snapshot = with_own(snapshot, own)
        spec[CONTEXT_BLOCKS] = [b.model_dump(mode="json") for b in own]
    return Loaded(
        snapshot=snapshot,
        revision=revision,
        max_event_id=max_event_id,
        expired=expired,
        spent=spent,
    )


def classify_goal(
    deps: ActivityDeps, ts: TenantStore, inp: CompileIn, prepared: Prepared
) -> Routed:
    """A goal that came without intents, classified (by the policy's rules, or a model),
    so the intent triggers can fire; the compile record keeps the goal as classified, and
    a recompile reads it from there rather than classifying again."""
    wake = inp.wake
    classifier = intent_classifier(
        deps,
        ts,
        prepared.agent,
        prepared.policy,
        wake_key=step_key(wake, "intents"),
        compile_key=step_key(wake, inp.call_index, "compile"),
    )
    classified = intents.classify_goal(inp.goal, prepared.policy, classifier)
    goal = inp.goal if classified is None else classified.goal
    return Routed(goal=goal, classified=classified, classifier=classifier)


def ask_query_sources(
    deps: ActivityDeps,
    ts: TenantStore,
    inp: CompileIn,
    prepared: Prepared,
    loaded: Loaded,
    goal: Goal,
) -> Asked:
    """The query sources' candidates for ``goal`` (retrieval, then the agent's own) added
    to the snapshot; the compiler decides. What they gave is stored with the spec so a
    replay uses the same."""
    wake = inp.wake
    telemetry = deps.telemetry
    index = deps.event_index()
    retrieval = (
        None
        if index is None
        else EventRetrieval(
            index,
            deps.retrieval_max_tokens,
            span=lambda q: telemetry.retrieval_span(
                wake.agent, "wakeful.events", wake=(wake.tenant, wake.wake_id), query=q
            ),
        )
    )
    snapshot = snapshot_input.ask_query_sources(
        ts,
        loaded.snapshot,
        prepared.spec,
        retrieval=retrieval,
        own=(*deps.query_sources, *prepared.agent.query_sources),
        goal=goal,
        policy=prepared.policy,
        call_index=inp.call_index,
        max_event_id=loaded.max_event_id,
    )
    return Asked(snapshot=snapshot, retrieval_hash=None if retrieval is None else retrieval.digest)


def failover_of(agent: Agent, policy: WindowPolicy) -> Failover:
    """The agent's failover: its own fallbacks (``Agent(fallbacks=...)``) under the policy's
    rules, else the policy's ``[failover]`` as it stands."""
    if not agent.fallbacks:
        return policy.failover
    routes = tuple(ModelRoute(provider=p, model=m) for p, m in agent.fallbacks)
    return policy.failover.model_copy(update={"fallbacks": routes})


def compile_pure(
    deps: ActivityDeps,
    inp: CompileIn,
    snapshot: Snapshot,
    policy: WindowPolicy,
    routed: Routed,
    expired: list[DecisionRecord],
    failover: Failover | None = None,
) -> Compiled:
    """The window (the pure compiler, one compile of an agent at a time), and its ledger
    with the orchestrator's annotations, the goal's routing and the expired decisions."""
    wake, telemetry = inp.wake, deps.telemetry
    with telemetry.compile_span(wake.agent, wake.wake_id, tenant=wake.tenant) as span:
        with deps.compile_locks(wake.tenant, wake.agent):
            window = compile_window(
                snapshot,
                routed.goal,
                policy,
                inp.now,
                counter=deps.counter,
                cache=deps.cache,
                alternates=[(r.provider, r.model) for r in failover.fallbacks] if failover else (),
            )
        telemetry.record_compile(window, agent=wake.agent, span=span)
    ledger = annotate(window.ledger, inp.annotations, inp.ttls)
    ledger = routing_decisions(ledger, policy, routed.goal, routed.classified)
    ledger = ledger.with_decision(MEMORY_SCOPE_ENTRY, scope_label(wake.user))
    if expired:
        ledger = ledger.with_decision(EXPIRED_ENTRY, expiry_note(expired))
    return Compiled(window=window, ledger=ledger, failover=failover)


def record(
    deps: ActivityDeps,
    ts: TenantStore,
    inp: CompileIn,
    prepared: Prepared,
    loaded: Loaded,
    routed: Routed,
    asked: Asked,
    compiled: Compiled,
) -> Recorded:
    """In one transaction: the window, ledger, policy and spec as blobs, the evidence the
    window brought as an event, and the compile record (once per step: a retry finds the
    first). A window that was committed goes to the worker's cache for the model call."""
    wake, window, ledger = inp.wake, compiled.window, compiled.ledger
    digest = snapshot_hash(asked.snapshot, memo=deps.block_hashes)  # before the tx opens
    blobs = [
        ("window", window.request_json),
        ("ledger", ledger.model_dump_json()),
        ("policy", prepared.policy.model_dump_json()),
        ("spec", canonical_json(prepared.spec)),
        *(("window", body) for body in window.alternates.values()),
    ]
    with ts.unit() as uow:
        # The blobs are written with the compile record (one statement).
        hashes, rows = uow.blobs.blob_rows(blobs)
        window_hash, ledger_hash, policy_hash, spec_hash, *others = hashes
        if window.evidence_text:
            evidence = evidence_event(wake, inp.call_index, window, inp.now)
            uow.events.append_events(wake.agent, [evidence])
        rec = uow.wakes.record_compile_with_blobs(
            CompileRecord(
                agent=wake.agent,
                wake_id=wake.wake_id,
                step_key=step_key(wake, inp.call_index, "compile"),
                call_index=inp.call_index,
                as_of=inp.now,
                max_event_id=loaded.max_event_id,
                goal=routed.goal.model_dump(mode="json"),
                policy_hash=policy_hash,
                snapshot_hash=digest,
                window_hash=window_hash,
                ledger_hash=ledger_hash,
                stable_prefix_hash=window.stable_prefix_hash,
                input_tokens=window.input_tokens,
                tokens_by_bucket=dict(window.tokens_by_bucket),
                retrieval_hash=asked.retrieval_hash,
                revision=loaded.revision,
                spec_hash=spec_hash,
                recent_limit=deps.recent_limit,
                alternates=alternates_record(compiled, others),
            ),
            rows,
        )
    if rec.window_hash == window_hash:  # committed: the model call may take it from here
        deps.windows.put(window_hash, window.request_json)
    # The step's record as committed (the first compile's, on a retry), for its model call.
    deps.compiles.put((ts.name, wake.wake_id, inp.call_index), rec)
    # A retry after a crash returns the first compile, so the model sees one window.
    used = ledger if rec.ledger_hash == ledger_hash else stored_ledger(ts, rec.ledger_hash)
    return Recorded(record=rec, ledger=used)


def alternates_record(compiled: Compiled, hashes: list[str]) -> dict[str, Any] | None:
    """What a model call needs to fail over: each route's window blob, in order, and the
    policy's rules (None: the agent has no fallbacks)."""
    failover = compiled.failover
    if failover is None or not failover.fallbacks:
        return None
    return {
        "routes": [[key, h] for key, h in zip(compiled.window.alternates, hashes, strict=True)],
        "after_attempts": failover.after_attempts,
        "cooldown_s": failover.cooldown_s,
    }


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
        user_id=wake.user,
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


# The ledger's entry naming whose memory the window was read from (``wakeful.users``).
MEMORY_SCOPE_ENTRY = "memory.scope"


def stored_ledger(ts: TenantStore, digest: str) -> Ledger:
    return Ledger.model_validate_json(ts.get_blob(digest))


def breakpoint_refs(ledger: Ledger) -> tuple[BreakpointRef, ...]:
    """The window's cache breakpoints, for the orchestrator's cache clock."""
    return tuple(
        BreakpointRef(name=b.name, ttl=b.ttl, prefix_tokens=b.prefix_tokens)
        for b in ledger.breakpoints
    )
