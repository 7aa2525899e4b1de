"""Provider cool-downs: routes (``provider/model``) a tenant's model calls skip for now.

A model call whose provider fails over records the route's cool-down here; later calls
read it before they choose a route. Times are the activity's clock, passed in (a workflow
never reads them), so a test drives the cool-down with a clock of its own.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert

from wakeful.substrate import schema as t
from wakeful.substrate.tenant_repo import TenantRepo

__all__ = ["CooldownsRepo"]


class CooldownsRepo(TenantRepo):
    """One tenant's provider cool-downs, on one connection."""

    def cooling_routes(self, routes: list[str], now: datetime) -> dict[str, str]:
        """Of ``routes``, those cooling down at ``now``, with the failure that began it."""
        c = t.provider_cooldowns.c
        rows = self.conn.execute(
            select(c.route, c.reason).where(
                c.tenant == self.tenant, c.route.in_(routes), c.until > now
            )
        )
        return {str(r.route): str(r.reason) for r in rows}

    def cool_down_route(self, route: str, until: datetime, reason: str) -> None:
        stmt = insert(t.provider_cooldowns).values(
            tenant=self.tenant, route=route, until=until, reason=reason
        )
        self.conn.execute(
            stmt.on_conflict_do_update(
                index_elements=["tenant", "route"],
                set_={"until": stmt.excluded.until, "reason": stmt.excluded.reason},
            )
        )
