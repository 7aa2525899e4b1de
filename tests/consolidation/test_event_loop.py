"""``summarise`` is an ``async`` activity: it runs on the worker's event loop, so its
database reads and writes must run in a thread, or every other activity and workflow task
waits for them."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.consolidation.test_round import COUNTER, agent_in, turns
from tests.e2e.harness import Providers
from wakeful.activities.consolidate_memory import MemoryActivities
from wakeful.activities.deps import ActivityDeps
from wakeful.agents import Agent, AgentRegistry
from wakeful.consolidation.contracts import PlanIn, SpanIn
from wakeful.substrate.store import Store, TenantStore
from wakeful.substrate.unit_of_work import UnitOfWork
from wakeful.testing.simulator.server import SimulatorServer


class _Watched(TenantStore):
    """A tenant store that notes the thread of every unit of work it opens."""

    threads: list[int]

    @contextmanager
    def unit(self) -> Iterator[UnitOfWork]:
        self.threads.append(threading.get_ident())
        with super().unit() as uow:
            yield uow


class _Store:
    def __init__(self, store: Store, tenant: TenantStore) -> None:
        self._store, self._tenant = store, tenant

    def tenant(self, name: str) -> TenantStore:
        return self._tenant

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


async def test_summarise_touches_the_substrate_off_the_event_loop(
    tenant: TenantStore, ops: Agent, store: Store, sim: SimulatorServer
) -> None:
    turns(tenant, ["Never deploy on a Friday.", "Understood.", "Thanks.", "Sure.", "Hi", "Hey"])
    watched = _Watched(store.engine, tenant.name)
    watched.threads = []
    deps = ActivityDeps(
        store=_Store(store, watched),  # type: ignore[arg-type]
        agents=AgentRegistry([ops]),
        providers=Providers(sim, uuid.uuid4().hex),
        counter=COUNTER,
    )
    acts = MemoryActivities(deps)
    a = agent_in(tenant, "r1")
    (span,) = acts.plan(PlanIn(agent=a)).spans
    watched.threads.clear()
    draft = await acts.summarise(SpanIn(agent=a, span=span, provider="anthropic", model="m"))
    assert draft.output_hash and not draft.reused
    assert watched.threads, "summarise read and wrote nothing"
    assert threading.get_ident() not in watched.threads  # never on the event loop
