"""Recompile a past model call from its point-in-time snapshot and compare the bytes.

The compile record names everything the compile used: the event horizon (``max_event_id``),
the clock (``as_of``), the agent's knowledge revision, the goal, and by hash the policy, the
agent spec and the retrieval hits. Loading the snapshot again and compiling it must give the
same window hash; if it does not, the outcome says whether the inputs changed or the output
did. Compiles recorded before revisions and spec hashes existed are read against the
substrate and the agent spec as they stand now: consolidation since can change those.
"""

from __future__ import annotations

import json

from pydantic import BaseModel

from wakeful.activities.snapshot_hash import snapshot_hash
from wakeful.activities.snapshot_input import build_snapshot
from wakeful.compiler import (
    COMPILER_VERSION,
    Ledger,
    WindowPolicy,
    compile_window,
    content_hash,
    diff_ledgers,
)
from wakeful.compiler.blocks import Goal
from wakeful.substrate.indexing import load_hits, retrieved_blocks
from wakeful.substrate.records import CompileRecord
from wakeful.substrate.snapshot import RECENT_LIMIT
from wakeful.substrate.store import TenantStore
from wakeful.tokenizers import counter_named


class ReplayOutcome(BaseModel):
    wake_id: str
    call_index: int
    identical: bool
    snapshot_identical: bool
    stored_window_hash: str
    replayed_window_hash: str
    first_difference: str | None = None
    stored_compiler_version: int = COMPILER_VERSION
    compiler_version: int = COMPILER_VERSION

    def summary(self) -> str:
        if self.identical:
            return (
                f"{self.wake_id} call {self.call_index}: recompiled byte-for-byte"
                f" (window {self.replayed_window_hash[:12]})"
            )
        cause = "the snapshot differs (agent spec or substrate changed)"
        if self.snapshot_identical:
            cause = "same snapshot, different window (compiler or policy changed)"
            if self.stored_compiler_version != self.compiler_version:
                cause = (
                    f"same snapshot, compiled by compiler version {self.stored_compiler_version};"
                    f" this is version {self.compiler_version}"
                )
        return (
            f"{self.wake_id} call {self.call_index}: MISMATCH — {cause};"
            f" first difference: {self.first_difference}"
        )


def recompile(
    ts: TenantStore, rec: CompileRecord, *, recent_limit: int = RECENT_LIMIT
) -> ReplayOutcome:
    """``recent_limit`` is used only for records that did not store theirs."""
    spec = (
        json.loads(ts.get_blob(rec.spec_hash)) if rec.spec_hash else ts.get_agent(rec.agent)["spec"]
    )
    wake = next(w for w in ts.wakes(rec.agent) if w.wake_id == rec.wake_id)
    # The evidence retrieval gave the compile, as stored: the vector store is not asked again.
    hits = load_hits(ts.get_blob(rec.retrieval_hash)).hits if rec.retrieval_hash else ()
    policy = WindowPolicy.model_validate_json(ts.get_blob(rec.policy_hash))
    snapshot = build_snapshot(
        ts,
        spec,
        session_id=wake.session_id,
        wake_id=wake.wake_id,
        max_event_id=rec.max_event_id,
        as_of=rec.as_of,
        recent_limit=rec.recent_limit or recent_limit,
        retrieved=retrieved_blocks(hits),
        revision=rec.revision,
        policy=policy,
    )
    stored = Ledger.model_validate_json(ts.get_blob(rec.ledger_hash))
    window = compile_window(
        snapshot,
        Goal.model_validate(rec.goal),
        policy,
        rec.as_of,
        counter=counter_named(stored.counter),
    )
    replayed = content_hash(window.request_json)
    identical = replayed == content_hash(ts.get_blob(rec.window_hash))
    diff = None if identical else diff_ledgers(stored, window.ledger)
    return ReplayOutcome(
        wake_id=rec.wake_id,
        call_index=rec.call_index,
        identical=identical,
        snapshot_identical=snapshot_hash(snapshot, like=rec.snapshot_hash) == rec.snapshot_hash,
        stored_window_hash=rec.window_hash,
        replayed_window_hash=replayed,
        first_difference=None if diff is None else f"{diff.block_id} ({diff.reason}) {diff.detail}",
        stored_compiler_version=stored.compiler_version,
    )
