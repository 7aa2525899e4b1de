"""Bring a database to the newest schema with Alembic (idempotent, safe to run concurrently)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, text

MIGRATIONS = Path(__file__).parent / "migrations"
# Serialises concurrent ``migrate`` calls (worker and CLI starting together).
_MIGRATION_LOCK = 0x5741_4B45


def alembic_config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return cfg


def migrate(engine: Engine) -> None:
    cfg = alembic_config()
    with engine.begin() as conn:
        conn.execute(text("select pg_advisory_xact_lock(:k)"), {"k": _MIGRATION_LOCK})
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")
