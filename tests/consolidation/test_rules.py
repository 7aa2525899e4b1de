"""Promotion rules: which sentences are load-bearing, with which ids and expiries."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.consolidation.helpers import T0, turn
from wakeful.consolidation.policy import ConsolidationPolicy
from wakeful.consolidation.rules import classify, promotions

POLICY = ConsolidationPolicy()


@pytest.mark.parametrize(
    ("sentence", "kind"),
    [
        ("You must never deploy the payments service on a Friday.", "constraint"),
        ("Never print customer emails in logs.", "constraint"),
        ("Please do not touch the legacy-billing repository.", "constraint"),
        ("Only the release manager may merge to main.", "constraint"),
        ("Agents are not allowed to rotate production credentials.", "constraint"),
        ("Every pull request requires two approvals before merge.", "constraint"),
        ("We decided to move the ledger to eu-west-1.", "decision"),
        ("The migration plan was approved by the platform team.", "decision"),
        ("Rejected: sharding the search cluster by region.", "decision"),
    ],
)
def test_load_bearing_sentences_are_recognised(sentence: str, kind: str) -> None:
    found = classify(sentence, from_user=True)
    assert found is not None and found[0] == kind


@pytest.mark.parametrize(
    "sentence",
    [
        "I don't know why the graph dipped.",
        "I must say the dashboards look great today.",
        "Must we really deploy today?",
        "We have not decided on the region yet.",
        "The cache hit rate looks healthy.",
    ],
)
def test_small_talk_is_not_promoted(sentence: str) -> None:
    assert classify(sentence, from_user=True) is None


def test_the_agent_promotes_only_labelled_decisions() -> None:
    assert classify("I must check the logs first.", from_user=False) is None
    assert classify("Decision: roll back the auth release.", from_user=False) == (
        "decision",
        "decision-label",
    )


def test_ids_are_explicit_or_derived_from_the_event() -> None:
    items = [
        turn(7, "C-4: Only the data team may run backfills. You must page the owner first."),
        turn(9, "We decided to keep v2.4.1 pinned. Never upgrade it during close."),
    ]
    promoted, _ = promotions(items, POLICY)
    assert [(p.decision_id, p.kind, p.source_event) for p in promoted] == [
        ("C-4", "constraint", 7),
        ("LB-7-2", "constraint", 7),
        ("DEC-9", "decision", 9),
        ("LB-9-2", "constraint", 9),
    ]
    assert promoted[0].text == "C-4: Only the data team may run backfills."
    assert "permission" in promoted[0].tags and "scope" in promoted[0].tags


def test_expiry_from_the_text_or_the_policy() -> None:
    items = [
        turn(1, "Do not deploy until 2026-03-09."),
        turn(2, "For the next 3 days you must ask before restarting workers."),
        turn(3, "Never share dashboards outside the company."),
        turn(4, "We agreed to freeze the schema."),
    ]
    promoted, _ = promotions(items, POLICY)
    by_event = {p.source_event: p.expires_at for p in promoted}
    assert by_event[1] is not None and by_event[1].date().isoformat() == "2026-03-10"
    assert by_event[2] == items[1].at + timedelta(days=3)
    assert by_event[3] is None  # constraints last until superseded by default
    assert by_event[4] == items[3].at + POLICY.decision_ttl  # type: ignore[operator]
    assert T0 < by_event[4]  # type: ignore[operator]


def test_revocations_name_the_retired_entry_and_its_successor() -> None:
    items = [
        turn(1, "C-21: Only the incident rota may restart workers; this replaces C-7."),
        turn(2, "C-12 no longer applies."),
        turn(3, "The old runbook replaces C-9 as far as I know.", role="assistant"),
    ]
    promoted, revoked = promotions(items, POLICY)
    assert [p.decision_id for p in promoted] == ["C-21"]
    assert [(r.decision_id, r.by) for r in revoked] == [
        ("C-7", "C-21"),
        ("C-12", "revoked@events:2"),
    ]
