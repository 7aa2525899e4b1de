"""The compile activity: gather a point-in-time snapshot, run the pure compiler, store the window.

The window and its ledger go to the substrate (content-addressed); only their hashes return
to the workflow.

Its substrate work is two transactions, not one per read and write: opening the wake (when
asked) and reading the snapshot share one, storing the blobs and the compile record the
other. Each transaction costs a pool checkout, ``BEGIN`` and ``COMMIT`` — round trips that
were most of a compile's time. The agent's own context sources, and the query sources
(retrieval: vector store I/O), run between them, on no open transaction.

The activity is a sequence of named stages (:mod:`wakeful.activities.compile_stages`), each
in a span of its own (``wakeful.compile.{stage}``).
"""

from __future__ import annotations

from temporalio import activity

from wakeful.activities.compile_stages import (
    Recorded,
    Routed,
    annotate,
    ask_query_sources,
    breakpoint_refs,
    classify_goal,
    compile_pure,
    evidence_event,
    failover_of,
    load_snapshot,
    prepare_wake,
    record,
    routing_decisions,
    stage,
    stored_ledger,
    wake_mcp_tools,
)
from wakeful.activities.deps import ActivityDeps
from wakeful.activities.intent_model import classify_cost
from wakeful.compiler import WindowPolicy
from wakeful.compiler.knobs import trigger_actions
from wakeful.contracts import COMPILE, CompileIn, CompileOut
from wakeful.substrate.records import Spend

__all__ = [
    "CompileActivities",
    "annotate",
    "breakpoint_refs",
    "evidence_event",
    "routing_decisions",
    "stored_ledger",
    "wake_mcp_tools",
]


class CompileActivities:
    def __init__(self, deps: ActivityDeps) -> None:
        self.deps = deps

    @activity.defn(name=COMPILE)
    def compile(self, inp: CompileIn) -> CompileOut:
        """Compile one window; open the wake first when asked (``CompileIn.open``)."""
        deps, wake = self.deps, inp.wake
        ts = deps.store.tenant(wake.tenant)
        with stage(deps, "prepare_wake", wake):
            prepared = prepare_wake(deps, ts, inp)
        with stage(deps, "load_snapshot", wake):
            loaded = load_snapshot(deps, ts, inp, prepared)
        with stage(deps, "classify_goal", wake):
            routed = classify_goal(deps, ts, inp, prepared)
        with stage(deps, "ask_query_sources", wake):
            asked = ask_query_sources(deps, ts, inp, prepared, loaded, routed.goal)
        with stage(deps, "compile", wake):
            compiled = compile_pure(
                deps,
                inp,
                asked.snapshot,
                prepared.policy,
                routed,
                loaded.expired,
                failover_of(prepared.agent, prepared.policy),
            )
        with stage(deps, "record", wake):
            recorded = record(deps, ts, inp, prepared, loaded, routed, asked, compiled)
        return compile_out(recorded, prepared.policy, routed, loaded.spent)


def compile_out(
    recorded: Recorded, policy: WindowPolicy, routed: Routed, spent: Spend | None
) -> CompileOut:
    """Only what the workflow reads: the result is written into its history every call
    (the stable prefix hash and the event horizon are in the compile record)."""
    rec, used = recorded.record, recorded.ledger
    action = trigger_actions(policy, routed.goal)  # a firing trigger's action (knobs.py)
    return CompileOut(
        window_hash=rec.window_hash,
        input_tokens=rec.input_tokens,
        breakpoints=breakpoint_refs(used),
        fresh_tokens=used.fresh_session_tokens(policy.retrieval.max_tokens),
        fresh_evidence_tokens=used.fresh_session_evidence(policy.retrieval.max_tokens),
        spent_today_usd=None if spent is None else spent.usd,
        spent_today_tokens=None if spent is None else spent.tokens,
        consolidate=policy.budget.consolidates(rec.tokens_by_bucket.get("recent", 0))
        or (action is not None and action[0] == "compact"),
        handoff=action[1] if action is not None and action[0] == "handoff" else "",
        intents_cost_usd=classify_cost(routed.classifier),
    )
