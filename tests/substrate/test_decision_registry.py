"""The decision registry written by key, on real Postgres: supersession by key, idempotent
writes, explicit retirement, and expiry that the compile retires and names."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.activities.test_model_activity import statements
from wakeful.errors import UserError
from wakeful.substrate.records import DecisionRecord
from wakeful.substrate.registry_repo import UnknownDecisionError, expiry_note
from wakeful.substrate.store import TenantStore

AT = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
AGENT = "ops"


@pytest.fixture(autouse=True)
def _agent(tenant: TenantStore) -> None:
    """The registry is written for an agent that exists (the store refuses others)."""
    tenant.upsert_agent(AGENT, model="m", provider="anthropic", instructions="i", spec={})


def _live(ts: TenantStore, at: datetime = AT, revision: int | None = None) -> dict[str, str]:
    return {d.decision_id: d.text for d in ts.live_decisions(AGENT, at, revision=revision)}


def _later() -> datetime:
    # live_decisions at a valid time counts decisions the database stamped by then.
    return datetime.now(UTC) + timedelta(minutes=1)


def test_a_decision_on_a_live_key_supersedes_the_one_before(tenant: TenantStore) -> None:
    first = tenant.record_decision(AGENT, key="db.engine", text="Use Postgres 15.")
    other = tenant.record_decision(AGENT, key="deploy.day", text="Deploy on Tuesdays.")
    second = tenant.record_decision(
        AGENT, key="db.engine", text="Use Postgres 16.", rationale="LTS"
    )
    assert (first.decision_id, other.decision_id, second.decision_id) == ("P-1", "P-2", "P-3")
    assert second.source == "person" and second.rationale == "LTS"
    assert _live(tenant, _later()) == {"P-2": "Deploy on Tuesdays.", "P-3": "Use Postgres 16."}
    assert tenant.decision(AGENT, "P-1").superseded_by == "P-3"
    assert tenant.decision(AGENT, "P-1").status(AT) == "superseded"
    # The registry as it stood before the second write still has the first.
    rev = tenant.knowledge_revision(AGENT)
    assert "P-1" in _live(tenant, AT, revision=rev - 1)
    assert "P-1" not in _live(tenant, AT, revision=rev)


def test_a_retried_write_with_its_id_writes_once_and_supersedes_once(
    tenant: TenantStore,
) -> None:
    # Not a person's: the model's decision supersedes it (a person's it would only propose).
    tenant.record_decision(AGENT, key="db.engine", text="Use Postgres 15.", source="consolidation")
    kw = {"key": "db.engine", "text": "Use Postgres 16.", "source": "tool"}
    one = tenant.record_decision(AGENT, decision_id="DEC-7", source_event=7, **kw)  # type: ignore[arg-type]
    revision = tenant.knowledge_revision(AGENT)
    again = tenant.record_decision(AGENT, decision_id="DEC-7", source_event=7, **kw)  # type: ignore[arg-type]
    assert one == again
    assert tenant.knowledge_revision(AGENT) == revision  # the retry wrote nothing
    entries = tenant.all_decisions(AGENT)
    assert [(d.decision_id, d.superseded_by) for d in entries] == [
        ("DEC-7", None),
        ("P-1", "DEC-7"),
    ]


def test_retiring_ends_a_decision_once_and_names_what_is_unknown(tenant: TenantStore) -> None:
    rec = tenant.record_decision(AGENT, key="freeze", text="No deploys this week.")
    done = tenant.retire_decision(AGENT, rec.decision_id, at=AT, by="person")
    assert done.status(AT) == "retired" and done.retired_by == "person"
    assert _live(tenant, _later()) == {}
    with pytest.raises(UserError, match="already retired"):
        tenant.retire_decision(AGENT, rec.decision_id, at=AT)
    with pytest.raises(UnknownDecisionError, match="has no decision 'P-9'"):
        tenant.retire_decision(AGENT, "P-9", at=AT)
    with pytest.raises(UserError, match="already retired"):
        tenant.supersede_with(AGENT, rec.decision_id, text="x", at=AT)


def test_superseding_a_keyless_decision_takes_its_id_as_the_key(tenant: TenantStore) -> None:
    tenant.register_decision(DecisionRecord(decision_id="LB-4", agent=AGENT, text="Never force."))
    new = tenant.supersede_with(AGENT, "LB-4", text="Force-push only to your own branches.", at=AT)
    assert new.key == "LB-4"
    assert tenant.decision(AGENT, "LB-4").superseded_by == new.decision_id
    with pytest.raises(UserError, match="already superseded by 'P-1'"):
        tenant.supersede_with(AGENT, "LB-4", text="again", at=AT)


def test_expiry_is_retired_by_one_step_and_named_on_its_retries(tenant: TenantStore) -> None:
    tenant.register_decision(
        DecisionRecord(
            decision_id="DEC-3",
            agent=AGENT,
            text="Freeze merges.",
            expires_at=AT - timedelta(hours=1),
        )
    )
    tenant.record_decision(
        AGENT, key="db.engine", text="Use Postgres 16.", expires_at=AT + timedelta(days=1)
    )
    before = tenant.knowledge_revision(AGENT)
    first = tenant.expire_decisions(AGENT, AT, step="wf:w1:0:compile")
    assert [d.decision_id for d in first] == ["DEC-3"]
    assert first[0].retired_at == AT - timedelta(hours=1)  # valid time: when it lapsed
    assert first[0].status(AT) == "expired"
    assert "DEC-3 expired 2026-06-01T11:00:00+00:00: Freeze merges." == expiry_note(first)
    retry = tenant.expire_decisions(AGENT, AT, step="wf:w1:0:compile")
    assert retry == first  # a retried compile names the same decisions
    assert tenant.expire_decisions(AGENT, AT, step="wf:w1:1:compile") == []
    assert tenant.knowledge_revision(AGENT) == before + 1  # nothing to expire: no revision
    with pytest.raises(UserError, match="already expired"):
        tenant.retire_decision(AGENT, "DEC-3", at=AT)


def test_a_compile_expires_then_reads_its_horizon_in_one_statement_when_nothing_is_due(
    tenant: TenantStore,
) -> None:
    """What expire_decisions and then the horizon read answer, in one statement when no
    decision is due and none was retired by the step; else the expiry, then the horizon
    as it stands after it (the revision the expiry wrote)."""
    tenant.record_decision(AGENT, key="db.engine", text="Use Postgres 16.", expires_at=AT)
    before = tenant.snapshot_horizon(AGENT)
    with statements(tenant) as sent:
        quiet = tenant.expire_then_horizon(AGENT, AT - timedelta(hours=1), step="wf:w1:0:compile")
    assert quiet == ([], before) and len(sent) == 1
    step = "wf:w1:1:compile"
    expired, after = tenant.expire_then_horizon(AGENT, AT, step=step)
    assert [d.key for d in expired] == ["db.engine"] and after.revision == before.revision + 1
    assert after == tenant.snapshot_horizon(AGENT)
    # A retry of the step names the same decisions, and writes no revision.
    assert tenant.expire_then_horizon(AGENT, AT, step=step) == (expired, after)


def test_registering_a_taken_id_returns_the_decision_that_holds_it(tenant: TenantStore) -> None:
    first = tenant.register_decision(DecisionRecord(decision_id="D-7", agent=AGENT, text="Pin."))
    again = tenant.register_decision(DecisionRecord(decision_id="D-7", agent=AGENT, text="Float."))
    assert (first.text, again.text) == ("Pin.", "Pin.")
    assert again.created_at is not None and again == tenant.decision(AGENT, "D-7")


@pytest.mark.parametrize(
    ("write", "says"),
    [
        ({"key": "<b>db</b>", "text": "x"}, "decision key '<b>db</b>' is not valid"),
        ({"key": "k" * 5000, "text": "x"}, "(5,000 characters) is not valid: a key is 1-100"),
        ({"key": "db.engine\n", "text": "x"}, "decision key 'db.engine\\n' is not valid"),
        ({"key": "db.engine", "text": "y" * 100_000}, "has 100,000 characters; keep it under"),
        ({"key": "db.engine", "text": "x", "rationale": "z" * 3000}, "rationale has 3,000"),
        ({"key": "db.engine", "text": " "}, "text must be a non-empty string"),
        ({"key": "db.engine", "text": "x", "source": "robot"}, "source 'robot' is not one of"),
        ({"key": "db.engine", "text": "x", "decision_id": "<i>D</i>"}, "decision id '<i>D</i>'"),
    ],
)
def test_every_write_is_checked_at_the_store(
    tenant: TenantStore, write: dict[str, str], says: str
) -> None:
    """The store, not only the CLI, refuses what a decision may not say: one short line,
    and nothing written (no decision, no revision)."""
    before = tenant.knowledge_revision(AGENT)
    with pytest.raises(UserError) as refused:
        tenant.record_decision(AGENT, **write)  # type: ignore[arg-type]
    line = str(refused.value)
    assert says in line and "\n" not in line and len(line) < 300, line
    assert tenant.all_decisions(AGENT) == []
    assert tenant.knowledge_revision(AGENT) == before


def test_a_decision_for_an_unknown_agent_is_refused(tenant: TenantStore) -> None:
    with pytest.raises(UserError, match="no agent 'ghost' in tenant"):
        tenant.record_decision("ghost", key="db.engine", text="Use Postgres 16.")
    assert tenant.all_decisions("ghost") == []
    assert tenant.knowledge_revision("ghost") == 0


def test_the_store_keeps_the_text_on_one_line(tenant: TenantStore) -> None:
    rec = tenant.record_decision(AGENT, key="db.engine", text="Use\nPostgres  16.", rationale="")
    assert (rec.text, rec.rationale) == ("Use Postgres 16.", None)


def test_a_key_holds_one_decision_per_user_and_a_persons_binds_every_user(
    tenant: TenantStore,
) -> None:
    """A user's decision on a key replaces only that user's (``wakeful.users``); the
    agent-wide one on the key holds for everyone, and a person's stays a person's: the
    model's decision over it, in a user's wake too, is a proposal."""

    def tool(key: str, text: str, n: int, user: str | None) -> DecisionRecord:
        return tenant.record_decision(
            AGENT, key=key, text=text, source="tool", decision_id=f"DEC-{n}", user_id=user
        )

    agent_wide = tool("ui.theme", "Dark theme.", 1, None)
    alice = tool("ui.theme", "Light theme for me.", 2, "alice")
    bob = tool("ui.theme", "High contrast for me.", 3, "bob")
    alice_again = tool("ui.theme", "Sepia for me.", 4, "alice")
    assert tenant.decision(AGENT, agent_wide.decision_id).superseded_by is None
    assert tenant.decision(AGENT, bob.decision_id).superseded_by is None
    assert tenant.decision(AGENT, alice.decision_id).superseded_by == alice_again.decision_id
    assert alice_again.user_id == "alice" and agent_wide.user_id is None

    held = tenant.record_decision(AGENT, key="db.engine", text="Use Postgres 16.")
    proposed = tool("db.engine", "Use MySQL for my reports.", 5, "alice")
    assert proposed.proposal_for == held.decision_id and proposed.user_id == "alice"
    assert tenant.decision(AGENT, held.decision_id).status(_later()) == "live"
