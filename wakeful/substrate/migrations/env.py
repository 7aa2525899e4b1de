"""Alembic environment: migrates the connection handed in by ``wakeful.substrate.migrate``."""

from __future__ import annotations

from alembic import context
from sqlalchemy import engine_from_config, pool

from wakeful.substrate.schema import metadata

config = context.config
target_metadata = metadata


def run_migrations() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        context.configure(connection=connection, target_metadata=target_metadata)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = engine_from_config(
        config.get_section(config.config_ini_section) or {},
        prefix="sqlalchemy.",
        poolclass=pool.NullPool,
    )
    with engine.connect() as conn:
        context.configure(connection=conn, target_metadata=target_metadata)
        with context.begin_transaction():
            context.run_migrations()


run_migrations()
