"""Query sources: the second phase of an agent's context, for layers that need what the
first phase gathered and the goal as classified.

The first phase (:mod:`wakeful.substrate.sources`) reads the substrate and runs the
agent's own :class:`~wakeful.substrate.sources.ContextSource` s; then the compile activity
classifies the goal (``compiler.intents``); then it asks the query sources, each given a
:class:`QueryContext`: the blocks gathered so far, the goal, the policy, the call. Like a
first-phase source, a :class:`QuerySource` has a name, a stability class and
``blocks(ctx)``; it is synchronous (the compile runs in a worker thread).

The built-in one is retrieval (:class:`EventRetrieval`): events the window does not hold
yet, on a wake's first call; it stores its hits itself (the compile record's
``retrieval_hash``), so a replay reads them back. An agent's own run concurrently with it,
each in a thread of its own, each store call in a transaction of its own; what they return
is stored with the compile's spec (``spec["query_blocks"]``), so a replay reads it back
rather than asking them again. They do not see each other's blocks, nor retrieval's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Protocol, runtime_checkable

from wakeful.compiler.blocks import Block, Goal, Stability
from wakeful.compiler.policy import WindowPolicy
from wakeful.substrate.indexing import EventIndex, retrieve, retrieved_blocks
from wakeful.substrate.sources import Started, source_blocks
from wakeful.substrate.store import TenantStore

__all__ = ["EventRetrieval", "QueryContext", "QuerySource", "ask"]


@dataclass(frozen=True)
class QueryContext:
    """What a query source may read for one compile."""

    store: TenantStore
    agent: str
    blocks: tuple[Block, ...]  # the snapshot as the first phase gathered it
    goal: Goal  # as classified (its intents named), the text a search would use
    policy: WindowPolicy
    call_index: int  # 0: the wake's first model call
    max_event_id: int  # the compile's event horizon
    user: str | None = None  # the user the wake serves (None: the agent's own wake)


@runtime_checkable
class QuerySource(Protocol):
    """One layer of an agent's context that searches for, or derives from, what the
    first phase brought and the goal asks."""

    @property
    def name(self) -> str: ...

    @property
    def stability(self) -> Stability:
        """How often the bytes of its blocks change (a block's own ``stability`` wins)."""
        ...

    def blocks(self, ctx: QueryContext) -> Sequence[Block]: ...


SpanOf = Callable[[str], AbstractContextManager[object]]  # a telemetry span, given the query


@dataclass
class EventRetrieval:
    """The built-in query source: stored events relevant to the goal that the window does
    not hold (``substrate.indexing.retrieve``), as ``RETRIEVED`` blocks.

    Made for one compile: it keeps the hash of the hits it stored (:attr:`digest`, None
    when it did not retrieve), which the compile record keeps so a replay uses the same
    hits; ``span`` wraps the search (the compile's telemetry)."""

    index: EventIndex
    max_tokens: int
    span: SpanOf | None = None
    name: str = "retrieval"
    stability: Stability = Stability.DYNAMIC  # the evidence segment's: blocks kept as made
    digest: str | None = field(default=None, init=False)

    def blocks(self, ctx: QueryContext) -> Sequence[Block]:
        with self.span(ctx.goal.text) if self.span is not None else nullcontext():
            hits, self.digest = retrieve(
                self.index,
                ctx.store,
                ctx.agent,
                ctx.blocks,
                goal_text=ctx.goal.text,
                policy=ctx.policy,
                max_event_id=ctx.max_event_id,
                max_tokens=self.max_tokens,
                call_index=ctx.call_index,
                user=ctx.user,
            )
        return retrieved_blocks(hits)


def ask(
    builtin: Sequence[QuerySource], own: Sequence[QuerySource], ctx: QueryContext
) -> tuple[list[Block], list[Block]]:
    """Every query source's blocks: (the built-in ones', asked in this thread one after
    another; the agent's own, each asked in a thread of its own, started first so they
    overlap), each in source order. An id of the agent's own blocks that the snapshot or
    another source has, or a source returning something else than Blocks, is one line
    naming it; a source's own exception is the compile's, as in the first phase."""
    started = Started(own, replace(ctx, store=ctx.store.standalone()))
    try:
        found = [b for s in builtin for b in source_blocks(s, ctx)]
    except BaseException:
        started.close()
        raise
    return found, started.blocks([*ctx.blocks, *found])
