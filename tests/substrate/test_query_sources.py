"""Query sources, the second phase: retrieval through the protocol gives what
``retrieve_into`` gave; an agent's own run in threads of their own with the first phase's
blocks and the goal, their blocks after retrieval's and stored with the spec; faults in
one line."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.substrate.test_indexing import EMB, T0, seed, words
from wakeful.activities.snapshot_input import QUERY_BLOCKS, ask_query_sources
from wakeful.agents import Agent
from wakeful.compiler.blocks import (
    AgentProfile,
    Block,
    BlockKind,
    Goal,
    GoalKind,
    Snapshot,
    Stability,
)
from wakeful.compiler.policy import WindowPolicy
from wakeful.errors import ConfigError, UserError
from wakeful.substrate.indexing import EventIndex, retrieve_into
from wakeful.substrate.query_sources import EventRetrieval, QueryContext, QuerySource
from wakeful.substrate.snapshot import event_block
from wakeful.substrate.store import TenantStore
from wakeful.substrate.vectors.memory import MemoryVectorStore

POLICY = WindowPolicy.default()
GOAL = Goal(kind=GoalKind.MESSAGE, text="when does the deploy key rotate?")


def _snapshot(tenant: TenantStore, ids: list[int]) -> Snapshot:
    """The first phase's snapshot: one seeded turn already in the window (retrieval leaves
    it out), and a user turn the retrieval query adds to the goal."""
    (held,) = [event_block(e) for e in tenant.events("a1") if e.id == ids[2]]
    profile = AgentProfile(tenant=tenant.name, name="a1", model="m", instructions="i")
    return Snapshot(agent=profile, as_of=T0, current_wake_id="w-1", blocks=(held,))


def _index() -> EventIndex:
    return EventIndex(MemoryVectorStore(), EMB, count_tokens=words)


@dataclass
class Spans:
    queries: list[str] = field(default_factory=list)

    def __call__(self, query: str) -> Any:
        self.queries.append(query)
        return _Span()


class _Span:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


@pytest.mark.parametrize("call_index", [0, 1])
def test_retrieval_through_the_protocol_gives_what_retrieve_into_gave(
    tenant: TenantStore, call_index: int
) -> None:
    ids = seed(tenant)
    snap = _snapshot(tenant, ids)
    kw: dict[str, Any] = {"policy": POLICY, "max_event_id": ids[-1], "call_index": call_index}
    before, before_hash = retrieve_into(
        _index(), tenant, snap, goal_text=GOAL.text, max_tokens=200, **kw
    )
    spans = Spans()
    retrieval = EventRetrieval(_index(), 200, span=spans)
    assert isinstance(retrieval, QuerySource)
    spec: dict[str, Any] = {}
    after = ask_query_sources(tenant, snap, spec, retrieval=retrieval, own=(), goal=GOAL, **kw)
    assert after == before and retrieval.digest == before_hash
    assert spec == {}  # retrieval keeps its own record: the hits blob
    assert spans.queries == [GOAL.text]  # a span on every call, as before
    retrieved = [b for b in after.blocks if b.kind is BlockKind.RETRIEVED]
    if call_index == 0:
        assert retrieved and before_hash is not None
        assert all(b.stability is None for b in retrieved)  # blocks kept as retrieval made them
    else:
        assert not retrieved and before_hash is None and after is snap


@dataclass
class Probe:
    name: str
    out: list[Any] = field(default_factory=list)
    stability: Stability = Stability.DYNAMIC
    seen: list[tuple[int, QueryContext]] = field(default_factory=list)
    fail: Exception | None = None

    def blocks(self, ctx: QueryContext) -> Sequence[Any]:
        self.seen.append((threading.get_ident(), ctx))
        if self.fail is not None:
            raise self.fail
        return self.out


def _block(id: str) -> Block:
    return Block(id=id, kind=BlockKind.TASK_FRAME, text=id, source="probe")


def test_own_query_sources_get_the_gathered_blocks_and_the_goal_in_threads_of_their_own(
    tenant: TenantStore,
) -> None:
    ids = seed(tenant)
    snap = _snapshot(tenant, ids)
    one, two = Probe("one", [_block("q:1")]), Probe("two", [_block("q:2")])
    spec: dict[str, Any] = {}
    after = ask_query_sources(
        tenant,
        snap,
        spec,
        retrieval=EventRetrieval(_index(), 200),
        own=(one, two),
        goal=GOAL,
        policy=POLICY,
        call_index=0,
        max_event_id=ids[-1],
    )
    for probe in (one, two):
        ((thread, ctx),) = probe.seen
        assert thread != threading.get_ident()
        assert ctx.goal == GOAL and ctx.blocks == snap.blocks and ctx.call_index == 0
        assert ctx.max_event_id == ids[-1] and ctx.agent == "a1" and ctx.policy is POLICY
    kinds = [b.kind for b in after.blocks]
    # First phase, then retrieval's, then the own sources' in source order.
    assert kinds[0] is BlockKind.TURN and BlockKind.RETRIEVED in kinds
    assert [b.id for b in after.blocks[-2:]] == ["q:1", "q:2"]
    assert after.blocks[-1].stability is Stability.DYNAMIC  # the source's class
    assert [b["id"] for b in spec[QUERY_BLOCKS]] == ["q:1", "q:2"]


def test_a_query_sources_fault_is_one_line_and_its_exception_the_compiles(
    tenant: TenantStore,
) -> None:
    ids = seed(tenant)
    snap = _snapshot(tenant, ids)
    kw: dict[str, Any] = {
        "retrieval": None,
        "goal": GOAL,
        "policy": POLICY,
        "call_index": 0,
        "max_event_id": ids[-1],
    }
    with pytest.raises(ConfigError, match=r"^context source 'bad' returned str; return Blocks$"):
        ask_query_sources(tenant, snap, {}, own=(Probe("bad", ["text"]),), **kw)
    held = snap.blocks[0].id
    with pytest.raises(ConfigError, match=rf"^two context blocks have the id '{held}'"):
        ask_query_sources(tenant, snap, {}, own=(Probe("dup", [_block(held)]),), **kw)
    spec: dict[str, Any] = {}
    with pytest.raises(RuntimeError, match="search is down"):
        ask_query_sources(
            tenant, snap, spec, own=(Probe("down", fail=RuntimeError("search is down")),), **kw
        )
    assert spec == {}


def test_an_agent_takes_query_sources_and_names_one_that_is_not() -> None:
    source = Probe("runbook")
    assert Agent(name="a1", instructions="i", query_sources=[source]).query_sources == (source,)
    with pytest.raises(UserError, match=r"^agent 'a1': query_sources holds 'text'; a source has"):
        Agent(name="a1", instructions="i", query_sources=["text"])
