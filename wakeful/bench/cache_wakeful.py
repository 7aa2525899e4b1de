"""Wakeful's strategy in the cache benchmark: the production compile path, in memory.

Each call builds its snapshot with the worker's own
:func:`~wakeful.activities.compile.build_snapshot` over the in-memory substrate, adds the
wake's retrieval hits as ``retrieved`` blocks (as the retriever's ``to_block`` makes them:
the same chunk keeps its id across wakes), and compiles with ``compile_window``. The
compiled windows are kept so the benchmark can measure them against the limit.

Options exist for what-if variants (:mod:`wakeful.bench.cache_variants`): a different
event-tail bound or page, and a renderer override.
"""

from __future__ import annotations

from wakeful.activities.compile import build_snapshot
from wakeful.bench.cache_session import AgentSession
from wakeful.bench.cache_strategies import CallContext, Plan, Strategy
from wakeful.bench.cache_substrate import AGENT, goal_of
from wakeful.compiler import (
    Block,
    BlockKind,
    CompiledWindow,
    CountingCache,
    Policy,
    Renderer,
    TokenCounter,
    compile_window,
)
from wakeful.substrate.snapshot import RECENT_LIMIT, RECENT_PAGE

__all__ = ["WORKER_RECENT_LIMIT", "Wakeful"]

WORKER_RECENT_LIMIT = RECENT_LIMIT  # ActivityDeps.recent_limit's default: what a worker loads


class Wakeful(Strategy):
    """``recent_limit`` and ``recent_page`` bound raw events per snapshot as the worker
    does; ``renderer`` overrides the provider renderer (the compiler's extension point)."""

    def __init__(
        self,
        session: AgentSession,
        policy: Policy,
        counter: TokenCounter,
        *,
        name: str = "wakeful",
        recent_limit: int = WORKER_RECENT_LIMIT,
        recent_page: int = RECENT_PAGE,
        renderer: Renderer | None = None,
    ) -> None:
        self.name = name
        self.policy = policy
        self.counter = counter
        self.recent_limit = recent_limit
        self.recent_page = recent_page
        self.renderer = renderer
        self.cache = CountingCache()
        self._interned: dict[tuple[str, bool, str], Block] = {}
        self.windows: list[CompiledWindow] = []
        self.spec = {
            "name": AGENT,
            "model": session.model,
            "provider": "anthropic",
            "instructions": session.instructions,
            "tools": [dict(t) for t in session.tools],
        }

    def plan(self, ctx: CallContext) -> Plan:
        sub = ctx.substrate
        snapshot = build_snapshot(
            sub,  # type: ignore[arg-type]  # the TenantStore reads build_snapshot makes
            self.spec,
            session_id=ctx.ref.session_id,
            wake_id=ctx.ref.wake_id,
            max_event_id=sub.max_event_id(AGENT),
            as_of=ctx.now,
            recent_limit=self.recent_limit,
            recent_page=self.recent_page,
        )
        blocks = self._intern(snapshot.blocks)
        snapshot = snapshot.model_copy(update={"blocks": blocks + self._retrieved(ctx)})
        window = compile_window(
            snapshot,
            goal_of(ctx.wake),
            self.policy,
            ctx.now,
            counter=self.counter,
            cache=self.cache,
            renderer=self.renderer,
        )
        self.windows.append(window)
        return Plan(window.request)

    def _intern(self, blocks: tuple[Block, ...]) -> tuple[Block, ...]:
        """Reuse the Block object of an unchanged block, so the compiler's facts cache hits.

        The snapshot code builds new objects on every call, as the worker does; ids are
        stable and a row's text never changes (only ``resolved`` may), so (id, resolved,
        text) identifies a block's content. The cache only saves work: output is the same.
        """
        out = []
        for block in blocks:
            key = (block.id, block.resolved, block.text)
            out.append(self._interned.setdefault(key, block))
        return tuple(out)

    @staticmethod
    def _retrieved(ctx: CallContext) -> tuple[Block, ...]:
        events = ctx.substrate.events(AGENT, wake_id=ctx.ref.wake_id)
        ask = next(e for e in events if e.kind == "turn")
        return tuple(
            Block(
                id=f"retrieved:{d.id}",
                kind=BlockKind.RETRIEVED,
                text=d.text,
                source=f"chunk:{d.id}",
                seq=ask.id,
                relevance=d.relevance,
            )
            for d in ctx.docs.get(ctx.ref.wake_id, ())
        )
