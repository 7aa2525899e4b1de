"""Agents: each tenant's registered agents, their model, instructions and spec.

:class:`AgentsRepo` works on one tenant's agents, on the connection it is given (a unit of
work's: :mod:`wakeful.substrate.unit_of_work`). Registering an agent twice updates it in
place (its spec hash says whether it changed); registering one registers its tenant.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert

from wakeful.compiler.blocks import content_hash
from wakeful.compiler.canonical import recorded_json
from wakeful.errors import UnknownAgentError
from wakeful.substrate import schema as t
from wakeful.substrate.pg_safe import pg_json
from wakeful.substrate.tenant_repo import TenantRepo

__all__ = ["AgentsRepo"]


class AgentsRepo(TenantRepo):
    """One tenant's agents, on one connection."""

    def upsert_agent(
        self, name: str, *, model: str, provider: str, instructions: str, spec: dict[str, Any]
    ) -> None:
        spec = pg_json(spec)  # hashed as stored
        spec_json = recorded_json(spec)  # the spelling stored spec hashes were made in
        row = {
            "tenant": self.tenant,
            "name": name,
            "model": model,
            "provider": provider,
            "instructions": instructions,
            "spec": spec,
            "spec_hash": content_hash(spec_json),
        }
        self.conn.execute(insert(t.tenants).values(tenant=self.tenant).on_conflict_do_nothing())
        stmt = insert(t.agents).values(**row)
        self.conn.execute(
            stmt.on_conflict_do_update(
                index_elements=["tenant", "name"],
                set_={k: stmt.excluded[k] for k in row if k not in ("tenant", "name")},
            )
        )

    def get_agent(self, name: str) -> dict[str, Any]:
        row = self.conn.execute(
            select(t.agents).where(t.agents.c.tenant == self.tenant, t.agents.c.name == name)
        ).first()
        if row is None:
            raise UnknownAgentError(
                f"no agent {name!r} in tenant {self.tenant!r}; create it with"
                " `wakeful agent create`"
            )
        return dict(row._mapping)

    def list_agents(self) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            select(t.agents).where(t.agents.c.tenant == self.tenant).order_by(t.agents.c.name)
        )
        return [dict(r._mapping) for r in rows]
