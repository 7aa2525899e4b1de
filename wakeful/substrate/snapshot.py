"""Point-in-time snapshots: the substrate's rows as compiler blocks, as of one moment.

A snapshot is bounded by ``max_event_id`` (the last event the compile could see), ``as_of``
(the clock the compile ran at) and ``revision`` (the agent's knowledge revision: which
memories, decisions, summaries, notes and retirements had been written), so a past compile
can be loaded again exactly and recompiled byte-for-byte, whatever consolidation did since.
Only a bounded tail of raw events is loaded; older history reaches the window
through summaries, the registry, the handoff note and retrieval. The tail's start moves in
pages of ``RECENT_PAGE`` events (``TenantStore.recent_events``), not one event per event, so
that the history a window begins with — the provider's cached prefix — stays put between.
"""

from __future__ import annotations

from wakeful.compiler.blocks import CAPPED_META, Block, BlockKind, Role
from wakeful.compiler.evidence import EVIDENCE_HASHES_META, EVIDENCE_META
from wakeful.compiler.oversize import WHOLE_TEXT_META
from wakeful.substrate.records import StoredEvent

RECENT_LIMIT = 200  # raw events a snapshot loads at least (when there are that many)
RECENT_PAGE = 100  # ... and at most this many fewer than one more page

_EVENT_KIND = {
    "turn": BlockKind.TURN,
    "evidence": BlockKind.TURN,  # a user item of its wake, sent as recorded
    "tool_call": BlockKind.TOOL_CALL,
    "tool_result": BlockKind.TOOL_RESULT,
}


def event_block(e: StoredEvent) -> Block:
    return Block(
        id=f"ev:{e.id}",
        kind=_EVENT_KIND[e.kind],
        text=e.text,
        source=f"events:{e.id}",
        seq=e.id,
        role=Role(e.role) if e.role else None,
        tool_call_id=e.tool_call_id,
        tool_name=e.tool_name,
        tool_input=e.tool_input,
        is_error=e.is_error,
        resolved=e.resolved,
        captured_at=e.event_time,
        session_id=e.session_id,
        wake_id=e.wake_id,
        external_id=e.external_id,
        meta=_block_meta(e),
    )


def _block_meta(e: StoredEvent) -> dict[str, str]:
    # Which model reply an assistant event is part of: the renderer sends a reply back as
    # the one message it was (``compiler.render.base``). A wake's recorded evidence lists
    # the blocks it holds (``compiler.evidence``).
    if e.kind == "evidence":
        held = {EVIDENCE_META: e.meta.get(EVIDENCE_META, "")}
        if EVIDENCE_HASHES_META in e.meta:  # recorded since content hashes were kept
            held[EVIDENCE_HASHES_META] = e.meta[EVIDENCE_HASHES_META]
        return held
    if e.kind == "tool_result" and CAPPED_META in e.meta:  # shown in part: read_result
        return {CAPPED_META: e.meta[CAPPED_META]}
    if e.kind == "turn" and WHOLE_TEXT_META in e.meta:  # the handle, if shown in part
        return {WHOLE_TEXT_META: e.meta[WHOLE_TEXT_META]}
    return {"reply": e.meta["reply"]} if "reply" in e.meta else {}


def event_blocks_of(
    events: list[StoredEvent], memo: dict[int, tuple[StoredEvent, Block]] | None
) -> list[Block]:
    """Each event's block; with ``memo``, the block made of the very same event object
    before (a cached tail hands out the same objects compile after compile)."""
    if memo is None:
        return [event_block(e) for e in events]
    out = []
    for e in events:
        made = memo.get(e.id)
        if made is None or made[0] is not e:
            made = memo[e.id] = (e, event_block(e))
        out.append(made[1])
    return out


def drop_orphans(events: list[StoredEvent]) -> list[StoredEvent]:
    """A bounded tail can cut a tool call from its result; keep only complete pairs."""
    calls = {e.tool_call_id for e in events if e.kind == "tool_call"}
    results = {e.tool_call_id for e in events if e.kind == "tool_result"}
    return [
        e
        for e in events
        if e.kind in ("turn", "evidence")
        or (e.kind == "tool_call" and e.tool_call_id in results)
        or (e.kind == "tool_result" and e.tool_call_id in calls)
        # An unanswered call of the current wake is work in progress, not an orphan.
        or (e.kind == "tool_call" and e.retired_at is None and e.wake_id is not None)
    ]


def as_of_revision(e: StoredEvent, revision: int | None) -> StoredEvent:
    """The event as it stood at ``revision``: a retirement recorded later is undone."""
    if revision is None or e.retired_rev is None or e.retired_rev <= revision:
        return e
    return e.model_copy(update={"retired_at": None, "retired_by": None, "retired_rev": None})
