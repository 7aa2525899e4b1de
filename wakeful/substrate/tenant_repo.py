"""What every repository holds: the connection it works on and the tenant it serves."""

from __future__ import annotations

from sqlalchemy import Connection

__all__ = ["TenantRepo"]


class TenantRepo:
    """One tenant's rows on one connection (a unit of work's:
    :mod:`wakeful.substrate.unit_of_work`); every statement a repository sends binds
    ``tenant``, so it cannot reach another tenant's rows."""

    def __init__(self, conn: Connection, tenant: str) -> None:
        self.conn = conn
        self.tenant = tenant
