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

from datetime import datetime
from typing import TYPE_CHECKING

from wakeful.compiler.blocks import CAPPED_META, Block, BlockKind, Role
from wakeful.compiler.evidence import EVIDENCE_META
from wakeful.substrate.records import StoredEvent
from wakeful.substrate.store import TenantStore
from wakeful.substrate.tail_cache import TailCache

if TYPE_CHECKING:
    from wakeful.substrate.sources import SourceContext

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
        return {EVIDENCE_META: e.meta.get(EVIDENCE_META, "")}
    if e.kind == "tool_result" and CAPPED_META in e.meta:  # shown in part: read_result
        return {CAPPED_META: e.meta[CAPPED_META]}
    return {"reply": e.meta["reply"]} if "reply" in e.meta else {}


def _event_blocks(
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


def _drop_orphans(events: list[StoredEvent]) -> list[StoredEvent]:
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


def load_blocks(
    store: TenantStore,
    agent: str,
    *,
    max_event_id: int,
    as_of: datetime,
    current_wake_id: str | None,
    session_id: str | None = None,
    recent_limit: int = RECENT_LIMIT,
    recent_page: int = RECENT_PAGE,
    revision: int | None = None,
    tail_cache: TailCache | None = None,
) -> list[Block]:
    """Every candidate block the substrate holds for ``agent`` at (``max_event_id``, ``as_of``,
    ``revision``): the built-in context sources' (``substrate.sources``) but the skills,
    which come with an agent's spec. Without a revision, knowledge is read as it stands now
    (compiles recorded before revisions existed).

    With ``session_id``, raw turns come from that session only: a new session starts from
    the handoff note and the substrate, not from a replayed transcript. Every read runs in
    one transaction on one connection: a consistent view, and one pool checkout. With
    ``tail_cache`` (and a revision), the raw tail comes from it: the same events, with only
    those appended since its last read read again.
    """
    from wakeful.substrate.sources import BUILTIN_SOURCES, SourceContext, gather

    ctx = SourceContext(
        store=store,
        agent=agent,
        spec={},
        max_event_id=max_event_id,
        as_of=as_of,
        current_wake_id=current_wake_id,
        session_id=session_id,
        revision=revision,
        recent_limit=recent_limit,
        recent_page=recent_page,
        tail_cache=tail_cache,
    )
    blocks, _ = gather(BUILTIN_SOURCES, ctx)
    return blocks


def _as_of_revision(e: StoredEvent, revision: int | None) -> StoredEvent:
    """The event as it stood at ``revision``: a retirement recorded later is undone."""
    if revision is None or e.retired_rev is None or e.retired_rev <= revision:
        return e
    return e.model_copy(update={"retired_at": None, "retired_by": None, "retired_rev": None})


def event_tail(ctx: SourceContext) -> list[Block]:
    """The history source: the bounded raw tail (of the session), the current wake's
    events, as they stood at the snapshot's point in time, complete tool pairs only."""
    store, agent, revision = ctx.store, ctx.agent, ctx.revision
    memo = None
    if ctx.tail_cache is not None:
        recent, memo = ctx.tail_cache.read(
            store,
            agent,
            max_id=ctx.max_event_id,
            limit=ctx.recent_limit,
            session_id=ctx.session_id,
            page=ctx.recent_page,
            revision=revision,
        )
    else:
        recent = store.recent_events(
            agent,
            max_id=ctx.max_event_id,
            limit=ctx.recent_limit,
            session_id=ctx.session_id,
            page=ctx.recent_page,
        )
    recent = [_as_of_revision(e, revision) for e in recent]
    live = [e for e in recent if e.retired_at is None or e.retired_at > ctx.as_of]
    if ctx.current_wake_id is not None:
        seen = {e.id for e in live}
        live += [
            _as_of_revision(e, revision)
            for e in store.events(agent, wake_id=ctx.current_wake_id, max_id=ctx.max_event_id)
            if e.id not in seen
        ]
        live.sort(key=lambda e: e.id)
    return _event_blocks(_drop_orphans(live), memo)
