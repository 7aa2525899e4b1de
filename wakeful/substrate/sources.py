"""Context sources: where a snapshot's candidate blocks come from, behind one protocol.

A :class:`ContextSource` has a name, a stability class (how often its blocks' bytes change,
which decides the cache segment they compete in unless a block says otherwise) and a
``blocks(ctx)`` method returning its candidates for one compile. The compile activity runs
in a worker thread, so sources are synchronous.

The built-in sources read the substrate: the raw event tail (history and the current wake),
live decisions, the handoff note that opened the session, summaries, memories, and the
agent's skills. They run inside the snapshot's one unit of work (their ``ctx.store`` is
bound to it), on its connection (a connection runs one statement at a time), all bounded by
the same point in time (``max_event_id``, ``as_of``, ``revision``), so a later load of the
same compile reads the same rows. Sources that do not read the substrate (``substrate =
False``: an agent's own, such as the state of an environment) run concurrently with it,
each in a thread of its own (their store runs each call in a transaction of its own); what
they return is stored with the compile's spec (``spec["context_blocks"]``), so a
replay reads it back rather than asking them again.

Sources that need what these gathered, and the goal as classified, are the second phase
(``substrate.query_sources``): retrieval, which looks for what these did not bring, is one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from wakeful.compiler.blocks import Block, BlockKind, Stability
from wakeful.compiler.layer_budget import layer_meta
from wakeful.compiler.policy import WindowPolicy
from wakeful.compiler.triggers import LOADED_META, LOADED_TASK_META
from wakeful.errors import ConfigError
from wakeful.skills import (
    LOAD_SKILL,
    SKILL_META,
    SKILL_TASK_META,
    Skill,
    index_text,
    skill_ref,
    skills_of_spec,
)
from wakeful.substrate.registry_repo import registry_line
from wakeful.substrate.snapshot import (
    RECENT_LIMIT,
    RECENT_PAGE,
    as_of_revision,
    drop_orphans,
    event_blocks_of,
)
from wakeful.substrate.store import TenantStore
from wakeful.substrate.tail_cache import TailCache
from wakeful.users import visible_to

__all__ = [
    "BUILTIN_SOURCES",
    "LOADED_META",
    "USER_SCOPE",
    "ContextSource",
    "Layer",
    "SourceContext",
    "Started",
    "event_tail",
    "gather",
    "load_blocks",
    "source_blocks",
    "start",
    "user_scope",
]


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
            last_retired=ctx.last_retired,
        )
    else:
        recent = store.recent_events(
            agent,
            max_id=ctx.max_event_id,
            limit=ctx.recent_limit,
            session_id=ctx.session_id,
            page=ctx.recent_page,
        )
    scope = user_scope(ctx.spec)
    recent = [as_of_revision(e, revision) for e in recent if visible_to(e.user_id, scope)]
    live = [e for e in recent if e.retired_at is None or e.retired_at > ctx.as_of]
    if ctx.current_wake_id is not None:
        seen = {e.id for e in live}
        live += [
            as_of_revision(e, revision)
            for e in store.events(agent, wake_id=ctx.current_wake_id, max_id=ctx.max_event_id)
            if e.id not in seen and visible_to(e.user_id, scope)
        ]
        live.sort(key=lambda e: e.id)
    return event_blocks_of(drop_orphans(live), memo)


# A compile's spec names the user its wake serves here (absent: the agent's own wake), so
# that a replay, reading the stored spec, reads the substrate in the same scope.
USER_SCOPE = "user"


def user_scope(spec: Mapping[str, Any]) -> str | None:
    """The user a compile's wake serves, from its spec (None: the agent's own wake)."""
    user = spec.get(USER_SCOPE)
    return user if isinstance(user, str) else None


@dataclass(frozen=True)
class SourceContext:
    """What a source may read for one compile: the agent, the point in time, the policy."""

    store: TenantStore
    agent: str
    spec: Mapping[str, Any]
    max_event_id: int
    as_of: datetime
    current_wake_id: str | None
    session_id: str | None = None
    revision: int | None = None
    policy: WindowPolicy | None = None
    recent_limit: int = 200
    recent_page: int = 100
    tail_cache: TailCache | None = field(default=None, compare=False)
    # The revision at which an event of the agent was last retired (0: never), read with
    # ``revision`` in one statement, for the tail cache (None: it reads it itself).
    last_retired: int | None = None
    # The kinds of knowledge the agent had no row of when ``revision`` was read with them
    # (``revisions.Horizon.without``): their sources answer none without a read.
    without: frozenset[str] = frozenset()


@runtime_checkable
class ContextSource(Protocol):
    """One layer of an agent's context.

    A source may also have ``priority`` (an int: higher is admitted first when the window
    is tight) and ``budget_share`` (a fraction of the input budget its blocks may take at
    most): the compiler honours them (``compiler.layers``), and the ledger's decisions say
    per layer what it asked for and what it got. Without them, nothing changes."""

    @property
    def name(self) -> str: ...

    @property
    def stability(self) -> Stability:
        """How often the bytes of its blocks change (a block's own ``stability`` wins)."""
        ...

    @property
    def substrate(self) -> bool:
        """Whether it reads the substrate in the snapshot's transaction (built-ins do)."""
        ...

    def blocks(self, ctx: SourceContext) -> Sequence[Block]: ...


_Ctx = TypeVar("_Ctx")
_Ctx_contra = TypeVar("_Ctx_contra", contravariant=True)


class Layer(Protocol[_Ctx_contra]):
    """What a source of either phase has: a name, a stability class, and blocks for a
    context (:class:`SourceContext` here, ``query_sources.QueryContext`` in the second)."""

    @property
    def name(self) -> str: ...

    @property
    def stability(self) -> Stability: ...

    def blocks(self, ctx: _Ctx_contra) -> Sequence[Block]: ...


@dataclass(frozen=True)
class _Builtin:
    name: str
    stability: Stability
    read: Callable[[SourceContext], list[Block]]
    substrate: bool = True
    # The kind of knowledge it reads (``revisions.KNOWLEDGE_KINDS``): none to read when the
    # agent had no row of it at the snapshot's revision (``SourceContext.without``).
    knowledge: str | None = None

    def blocks(self, ctx: SourceContext) -> Sequence[Block]:
        if self.knowledge is not None and self.knowledge in ctx.without:
            return []
        return self.read(ctx)


def _decisions(ctx: SourceContext) -> list[Block]:
    # Pending proposals too, each saying it is one: the model sees that what it recorded
    # over a person's decision waits for that person, and that the person's holds.
    scope = user_scope(ctx.spec)
    return [
        Block(
            id=f"decision:{d.decision_id}",
            kind=BlockKind.LOAD_BEARING,
            text=registry_line(d),
            source=f"decisions:{d.decision_id}",
            seq=d.source_event or 0,
            load_bearing=d.proposal_for is None,
            importance=1.0,
        )
        for d in ctx.store.live_decisions(
            ctx.agent, ctx.as_of, revision=ctx.revision, proposals=True
        )
        if visible_to(d.user_id, scope)
    ]


def _handoff(ctx: SourceContext) -> list[Block]:
    # The note that opened this session: notes written within it would churn the cached
    # semi-stable segment on every wake, and the session's own turns are in the window anyway.
    note = ctx.store.latest_handoff(
        ctx.agent,
        before=ctx.as_of,
        other_than_session=ctx.session_id,
        revision=ctx.revision,
        scoped=True,
        user=user_scope(ctx.spec),
    )
    if note is None:
        return []
    return [
        Block(
            id=f"handoff:{note.id}",
            kind=BlockKind.HANDOFF_NOTE,
            text=note.body.render(),
            source=f"handoff_notes:{note.id}",
            seq=note.id or 0,
            session_id=note.session_id,
            importance=0.9,
        )
    ]


def _summaries(ctx: SourceContext) -> list[Block]:
    return [
        Block(
            id=f"summary:{s.id}",
            kind=BlockKind.SUMMARY,
            text=s.text,
            source=f"summaries:{s.id}",
            seq=s.span_end,
            importance=0.7,
            meta={"level": str(s.level), "span": f"{s.span_start}-{s.span_end}"},
        )
        for s in ctx.store.summaries(ctx.agent, max_id=ctx.max_event_id, revision=ctx.revision)
    ]


def _memories(ctx: SourceContext) -> list[Block]:
    scope = user_scope(ctx.spec)
    return [
        Block(
            id=f"memory:{m.id}",
            kind=BlockKind.MEMORY,
            text=m.text,
            source=m.source,
            seq=m.id or 0,
            captured_at=m.captured_at,
            supersession_key=m.key,
            importance=m.importance,
            meta={"verification": m.verification},
        )
        for m in ctx.store.memories(ctx.agent, at=ctx.as_of, revision=ctx.revision)
        if visible_to(m.user_id, scope)
    ]


def loaded_skills(ctx: SourceContext) -> dict[str, tuple[int, str]]:
    """The skills the model loaded in this session (or, without one, this wake) up to the
    compile's event horizon, the event that last loaded each and the task class it was
    loaded for ("" when not known). A retired result still counts: a skill stays loaded
    for the session, whatever consolidation did since, while the task class does. A load
    in another user's wake does not count: it is that user's history."""
    out: dict[str, tuple[int, str]] = {}
    with ctx.store.unit() as uow:
        results = uow.events.tool_result_meta(
            ctx.agent,
            LOAD_SKILL,
            max_id=ctx.max_event_id,
            session_id=ctx.session_id,
            wake_id=ctx.current_wake_id,
            user=user_scope(ctx.spec),
        )
    for event_id, meta in results:
        name = meta.get(SKILL_META)
        if isinstance(name, str):
            task = meta.get(SKILL_TASK_META, "")
            first = out.get(name)
            # The first load stands while the task class is the same: the block (and the
            # cache) stay as they were; a load for another task class loads it anew.
            if first is None or first[1] != task:
                out[name] = (event_id, task if isinstance(task, str) else "")
    return out


def _named_by_triggers(policy: WindowPolicy | None) -> list[str]:
    refs: dict[str, None] = {}
    for trigger in policy.triggers if policy is not None else ():
        for ref in trigger.inject:
            refs[ref] = None
    return list(refs)


def _skills(ctx: SourceContext) -> list[Block]:
    """The index (stable, its own: it sits with the instructions in the cached prefix), and the
    bodies that may enter the window: those a trigger can inject (the compiler gates them
    by the goal, and fails the compile on a trigger naming a skill the agent lacks) and
    those loaded in this session (meta ``loaded``: in the window whatever the goal)."""
    skills = skills_of_spec(ctx.spec)
    if not skills:
        return []
    by_ref = {skill_ref(s.name): s for s in skills}
    blocks = [
        Block(
            id="skills:index",
            kind=BlockKind.SKILL_INDEX,
            text=index_text(skills),
            source=f"agent:{ctx.agent}:skills",
            stability=Stability.STABLE,
            importance=1.0,
        )
    ]
    loaded = loaded_skills(ctx)
    wanted: dict[str, tuple[int, str] | None] = {}
    for ref in _named_by_triggers(ctx.policy):
        if ref in by_ref:
            wanted[ref] = None
    for name, loaded_by in loaded.items():
        if skill_ref(name) in by_ref:
            wanted[skill_ref(name)] = loaded_by
    for ref in sorted(wanted):
        blocks.append(_body(by_ref[ref], wanted[ref], ctx.agent))
    return blocks


def _body(skill: Skill, loaded_by: tuple[int, str] | None, agent: str) -> Block:
    meta: dict[str, str] = {}
    if loaded_by is not None:
        event_id, task = loaded_by
        # The task class only when known: a skill loaded before it was recorded keeps the
        # block (and the cached prefix) it had.
        meta = {LOADED_META: str(event_id)} | ({LOADED_TASK_META: task} if task else {})
    return Block(
        id=skill_ref(skill.name),
        kind=BlockKind.SKILL_BODY,
        text=skill.body,
        source=f"agent:{agent}:skills/{skill.name}",
        importance=1.0,
        meta=meta,
    )


# In the order their blocks have always joined the snapshot.
BUILTIN_SOURCES: tuple[ContextSource, ...] = (
    _Builtin("history", Stability.DYNAMIC, event_tail),
    _Builtin("decisions", Stability.SEMI_STABLE, _decisions, knowledge="decisions"),
    _Builtin("handoff", Stability.SEMI_STABLE, _handoff, knowledge="handoffs"),
    _Builtin("summaries", Stability.SEMI_STABLE, _summaries, knowledge="summaries"),
    _Builtin("memories", Stability.DYNAMIC, _memories, knowledge="memories"),
    _Builtin("skills", Stability.SEMI_STABLE, _skills),
)


def source_blocks(source: Layer[_Ctx], ctx: _Ctx) -> list[Block]:
    """A source's blocks, each given the source's stability unless it states its own (and
    checked: a source's fault is one line naming it, not a compile's stack trace)."""
    out: list[Block] = []
    layer = declared_layer(source)
    for b in source.blocks(ctx):
        if not isinstance(b, Block):
            raise ConfigError(
                f"context source {source.name!r} returned {type(b).__name__}; return Blocks"
            )
        if b.stability is None and b.effective_stability is not source.stability:
            b = b.model_copy(update={"stability": source.stability})
        if layer:
            b = b.model_copy(update={"meta": {**b.meta, **layer}})
        out.append(b)
    return out


def declared_layer(source: object) -> dict[str, str]:
    """The meta a source's blocks carry for the compiler's layer budgets
    (``compiler.layers``): its name, and the ``priority`` and ``budget_share`` it declares
    (attributes a source may have; without either, nothing)."""
    priority = getattr(source, "priority", None)
    share = getattr(source, "budget_share", None)
    try:
        return layer_meta(str(getattr(source, "name", "")), priority, share)
    except ConfigError as exc:
        raise ConfigError(f"context source {getattr(source, 'name', source)!r}: {exc}") from None


class Started(Generic[_Ctx]):
    """The sources that do not read the substrate (or any given), running, each in a
    thread of its own; :meth:`blocks` waits for them.

    A caller holding a transaction collects them after it commits, so a slow source (an
    environment's API) never keeps the snapshot's transaction, and its locks, open."""

    def __init__(self, sources: Sequence[Layer[_Ctx]], ctx: _Ctx) -> None:
        self._pool: ThreadPoolExecutor | None = None
        self._futures: list[Future[list[Block]]] = []
        if sources:
            self._pool = ThreadPoolExecutor(max_workers=len(sources), thread_name_prefix="source")
            self._futures = [self._pool.submit(source_blocks, s, ctx) for s in sources]

    def blocks(self, read: Sequence[Block] = ()) -> list[Block]:
        """Their blocks, in source order; an id that one of ``read`` has is one line."""
        try:
            out = [b for f in self._futures for b in f.result()]
        finally:
            self.close()
        seen: set[str] = {b.id for b in read}
        for b in out:
            if b.id in seen:
                raise ConfigError(f"two context blocks have the id {b.id!r}; give each its own id")
            seen.add(b.id)
        return out

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


def start(
    sources: Sequence[ContextSource], ctx: SourceContext
) -> tuple[list[Block], Started[SourceContext]]:
    """The substrate sources' blocks, read one after another in one unit of work (the one
    ``ctx.store`` is bound to, if it is: :meth:`TenantStore.within`), while the others run
    in threads of their own (started first, so they overlap the reads), each of their
    store's calls in a transaction of its own."""
    own = replace(ctx, store=ctx.store.standalone())
    started = Started([s for s in sources if not s.substrate], own)
    try:
        with ctx.store.unit() as uow:
            inside = replace(ctx, store=ctx.store.within(uow))
            read = [b for s in sources if s.substrate for b in source_blocks(s, inside)]
    except BaseException:
        started.close()
        raise
    return read, started


def gather(sources: Sequence[ContextSource], ctx: SourceContext) -> tuple[list[Block], list[Block]]:
    """Every source's blocks: (the substrate sources', the others'), each in source order
    (:func:`start`, then waiting for the others). Block ids must be unique across sources."""
    read, started = start(sources, ctx)
    return read, started.blocks(read)


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
