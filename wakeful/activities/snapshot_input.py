"""The compiler's input for one call: a point-in-time snapshot of the agent's profile (its
tools), the context sources' blocks, then the query sources' (retrieved candidates first).

The compile activity gathers the first phase inside its first transaction
(:func:`gather_snapshot`) and asks the query sources once the goal is classified
(:func:`ask_query_sources`); a replay, the benchmarks and the tests rebuild it from a stored
spec with :func:`build_snapshot`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, NotRequired, TypedDict, Unpack

from wakeful.compiler import WindowPolicy
from wakeful.compiler.blocks import (
    ON_DEMAND_META,
    AgentProfile,
    Block,
    BlockKind,
    Goal,
    Snapshot,
)
from wakeful.compiler.layer_budget import DOCUMENTS, spec_layer_meta
from wakeful.compiler.oversize import WHOLE_TEXT_META
from wakeful.skills import LOAD_SKILL, load_skill_schema
from wakeful.substrate.indexing import DOC_KIND
from wakeful.substrate.query_sources import EventRetrieval, QueryContext, QuerySource, ask
from wakeful.substrate.snapshot import RECENT_PAGE
from wakeful.substrate.sources import (
    BUILTIN_SOURCES,
    ContextSource,
    SourceContext,
    Started,
    start,
    user_scope,
)
from wakeful.substrate.store import TenantStore
from wakeful.substrate.tail_cache import TailCache
from wakeful.tool_results import CAPPED_META, READ_RESULT, read_result_schema

__all__ = [
    "CHUNK_KIND_META",
    "CONTEXT_BLOCKS",
    "QUERY_BLOCKS",
    "SnapshotPoint",
    "ask_query_sources",
    "build_snapshot",
    "gather_snapshot",
    "profile_blocks",
    "with_own",
    "with_tool_facts",
]


def _tool_block(
    tool: dict[str, Any], source: str, seq: int, meta: dict[str, str] | None = None
) -> Block:
    return Block(
        id=f"tool:{tool['name']}",
        kind=BlockKind.TOOL_SCHEMA,
        text=tool["description"],
        source=source,
        seq=seq,
        tool_name=tool["name"],
        tool_input=tool["input_schema"],
        importance=1.0,
        meta=meta or {},
    )


def profile_blocks(
    agent_name: str, tools: list[dict[str, Any]], *, skills: bool = False, reader: bool = False
) -> list[Block]:
    """The agent's tools, in declaration order (the compiler adds its instructions); for an
    agent with skills the built-in ``load_skill``; and for an agent with tools (or, with
    ``reader``, any agent) the built-in ``read_result``, which the compiler sends only while
    a shortened or cleared result, or a user turn shown in part, is in the window
    (``compiler.clearing``, ``compiler.oversize``).

    Built from the agent's stored spec, so a past compile can be rebuilt without the code.
    """
    blocks = [_tool_block(tool, f"agent:{agent_name}:tools", i) for i, tool in enumerate(tools)]
    if skills and all(t["name"] != LOAD_SKILL for t in tools):
        blocks.append(_tool_block(load_skill_schema(), "wakeful:tools", len(blocks)))
    if (blocks or reader) and all(t["name"] != READ_RESULT for t in tools):
        schema = read_result_schema()
        blocks.append(_tool_block(schema, "wakeful:tools", len(blocks), {ON_DEMAND_META: "1"}))
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


def with_document_layer(blocks: Sequence[Block], spec: dict[str, Any]) -> list[Block]:
    """Retrieved document chunks stamped with the ``documents`` layer's priority and share,
    when the agent declares them (``Agent(layers=...)``, ``compiler.layers``)."""
    meta = spec_layer_meta(spec, DOCUMENTS)
    if not meta:
        return list(blocks)
    return [
        b.model_copy(update={"meta": {**b.meta, **meta}})
        if b.meta.get(CHUNK_KIND_META) == DOC_KIND
        else b
        for b in blocks
    ]


CHUNK_KIND_META = "chunk_kind"  # a retrieved block's chunk kind (``RetrievalHit.to_block``)
CONTEXT_BLOCKS = "context_blocks"  # a compile's spec: what the agent's own sources gave
QUERY_BLOCKS = "query_blocks"  # a compile's spec: what the agent's own query sources gave


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
    last_retired: int | None = None,
    without: frozenset[str] = frozenset(),
) -> tuple[Snapshot, Started[SourceContext]]:
    """The compiler's input for one call from the agent's spec and the built-in context
    sources (``substrate.sources``), and its own ``sources`` still running: the caller
    waits for them (after its transaction, if it holds one), adds their blocks with
    :func:`with_own` and stores them with the spec (``spec["context_blocks"]``), where a
    replay's spec brings them back instead of the sources being asked again.

    ``retrieved`` are retrieval candidates stored with this call, for a replay (the compile
    activity retrieves later, in :func:`ask_query_sources`), placed before the blocks of
    the agent's own query sources stored with the spec (``spec["query_blocks"]``);
    ``revision`` the agent's knowledge revision to read at (None: as it stands now);
    ``tail_cache`` keeps the raw tail between compiles (:mod:`wakeful.substrate.tail_cache`);
    ``policy`` names the skills its triggers may inject; ``last_retired`` is the revision
    at which an event was last retired, read with ``revision`` (for the tail cache);
    ``without`` the kinds of knowledge the agent had no row of then (not read).
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
        last_retired=last_retired,
        without=without,
    )
    events, started = start((*BUILTIN_SOURCES, *sources), ctx)
    stored = [Block.model_validate(b) for b in spec.get(CONTEXT_BLOCKS, ())]
    tools = list(spec["tools"])
    events = with_tool_facts(events, tools)
    if not tools and any(CAPPED_META in b.meta for b in events):  # (tools since removed)
        tools = [read_result_schema()]
    # A long user turn has a handle to read it by, should a window show it in part.
    whole = any(WHOLE_TEXT_META in b.meta for b in events)
    blocks = profile_blocks(name, tools, skills=bool(spec.get("skills")), reader=whole)
    blocks += events + stored
    blocks += with_document_layer(retrieved, spec)
    blocks += [Block.model_validate(b) for b in spec.get(QUERY_BLOCKS, ())]
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


def ask_query_sources(
    ts: TenantStore,
    snapshot: Snapshot,
    spec: dict[str, Any],
    *,
    retrieval: EventRetrieval | None,
    own: Sequence[QuerySource],
    goal: Goal,
    policy: WindowPolicy,
    call_index: int,
    max_event_id: int,
) -> Snapshot:
    """The snapshot with the query sources' blocks after the first phase's
    (:mod:`wakeful.substrate.query_sources`): ``retrieval``'s (the built-in, which keeps
    its hits' hash), then the agent's ``own``, stored with the spec
    (``spec["query_blocks"]``), where a replay's spec brings them back."""
    ctx = QueryContext(
        store=ts,
        agent=snapshot.agent.name,
        blocks=snapshot.blocks,
        goal=goal,
        policy=policy,
        call_index=call_index,
        max_event_id=max_event_id,
        user=user_scope(spec),
    )
    found, asked = ask(() if retrieval is None else (retrieval,), own, ctx)
    found = with_document_layer(found, spec)
    if asked:
        spec[QUERY_BLOCKS] = [b.model_dump(mode="json") for b in asked]
    if not found and not asked:
        return snapshot
    return snapshot.model_copy(update={"blocks": (*snapshot.blocks, *found, *asked)})


class SnapshotPoint(TypedDict):
    """Where and when a snapshot is read (the keywords of :func:`gather_snapshot` but its
    ``sources``)."""

    session_id: str | None
    wake_id: str | None
    max_event_id: int
    as_of: datetime
    recent_limit: int
    recent_page: NotRequired[int]
    retrieved: NotRequired[Sequence[Block]]
    revision: NotRequired[int | None]
    tail_cache: NotRequired[TailCache | None]
    policy: NotRequired[WindowPolicy | None]


def build_snapshot(
    ts: TenantStore, spec: dict[str, Any], **point: Unpack[SnapshotPoint]
) -> Snapshot:
    """The compiler's input for one call from the built-in sources and the spec (as a
    replay rebuilds it: see :func:`gather_snapshot`)."""
    snapshot, started = gather_snapshot(ts, spec, **point)
    started.close()  # no sources of its own were given
    return snapshot
