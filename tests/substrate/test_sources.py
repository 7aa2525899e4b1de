"""gather: the substrate sources in the snapshot's transaction, one after another; an
agent's own sources in threads of their own meanwhile; faults in one line."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from wakeful.compiler.blocks import Block, BlockKind, Stability
from wakeful.errors import ConfigError
from wakeful.substrate.sources import BUILTIN_SOURCES, SourceContext, gather
from wakeful.substrate.store import TenantStore

NOW = datetime(2026, 1, 5, tzinfo=UTC)


@dataclass
class Probe:
    name: str
    substrate: bool
    out: list[Any] = field(default_factory=list)
    stability: Stability = Stability.DYNAMIC
    seen: list[tuple[int, bool]] = field(default_factory=list)

    def blocks(self, ctx: SourceContext) -> Sequence[Any]:
        # Which thread, and whether it ran inside the snapshot's transaction.
        self.seen.append((threading.get_ident(), ctx.store.bound is not None))
        return self.out


def _ctx(tenant: TenantStore) -> SourceContext:
    return SourceContext(
        store=tenant, agent="a", spec={}, max_event_id=0, as_of=NOW, current_wake_id=None
    )


def _block(id: str) -> Block:
    return Block(id=id, kind=BlockKind.TASK_FRAME, text=id, source="probe")


def test_own_sources_run_in_threads_and_substrate_ones_in_the_transaction(
    tenant: TenantStore,
) -> None:
    inside = Probe("inside", True, [_block("in:1")])
    own = Probe("own", False, [_block("own:1")])
    read, other = gather((*BUILTIN_SOURCES, own, inside), _ctx(tenant))
    assert [b.id for b in read] == ["in:1"] and [b.id for b in other] == ["own:1"]
    ((in_thread, in_tx),) = inside.seen
    ((own_thread, own_tx),) = own.seen
    assert in_thread == threading.get_ident() and in_tx
    assert own_thread != threading.get_ident() and not own_tx
    # The source's stability is the block's unless the block states its own.
    assert other[0].stability is Stability.DYNAMIC


def test_a_sources_fault_is_one_line(tenant: TenantStore) -> None:
    with pytest.raises(ConfigError, match=r"^context source 'bad' returned str; return Blocks$"):
        gather((Probe("bad", False, ["text"]),), _ctx(tenant))
    twice = (Probe("one", False, [_block("x")]), Probe("two", True, [_block("x")]))
    with pytest.raises(ConfigError, match=r"^two context blocks have the id 'x'"):
        gather(twice, _ctx(tenant))
