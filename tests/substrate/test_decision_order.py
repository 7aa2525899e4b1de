"""Decisions are listed by id in code-point order whatever the database's collation, so the
order they take in a window does not depend on how the database was created (the Postgres
image's default is a linguistic ``en_US.utf8``; a restore may land on another).

The embedded Postgres here has only code-point collations (no ICU, no libc locales beyond
C), so a database that would sort otherwise cannot be made in a test; the statements are
checked to carry the collation instead, and the order on this database against Python's."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.dialects import postgresql

from wakeful.substrate import knowledge, registry_repo
from wakeful.substrate.records import DecisionRecord
from wakeful.substrate.store import Store


def _sql(stmt: object) -> str:
    return str(stmt.compile(dialect=postgresql.dialect()))  # type: ignore[attr-defined]


def test_every_decision_listing_orders_by_code_point() -> None:
    for stmt in (
        knowledge._LIVE_DECISIONS,
        registry_repo._DUE_OR_MINE,
        registry_repo._MINE,
    ):
        assert 'ORDER BY decisions.decision_id COLLATE "C"' in _sql(stmt)


def test_live_decisions_come_in_python_string_order(store: Store) -> None:
    ts = store.tenant("collation-order")
    ids = ["d_b", "D-a", "d-c", "Dz", "d.a", "é1"]
    for i in ids:
        ts.register_decision(DecisionRecord(decision_id=i, agent="a", text=f"rule {i}"))
    live = ts.live_decisions("a", at=datetime.now(UTC))
    assert [d.decision_id for d in live] == sorted(ids)
