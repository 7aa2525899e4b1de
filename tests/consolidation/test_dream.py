"""Dreaming merge: near duplicates merged with provenance; lossy rewrites rejected."""

from __future__ import annotations

from datetime import timedelta

from tests.consolidation.helpers import T0
from wakeful.consolidation.dream import check_rewrite, duplicate_groups, merge, rewrite_loss
from wakeful.consolidation.hygiene import MemoryView
from wakeful.consolidation.policy import ConsolidationPolicy

POLICY = ConsolidationPolicy()


def mem(i: int, key: str, text: str, importance: float = 0.5) -> MemoryView:
    return MemoryView(
        id=i,
        key=key,
        text=text,
        source=f"events:{i * 10}",
        importance=importance,
        captured_at=T0 + timedelta(days=i),
    )


def test_near_duplicates_from_two_sessions_merge_with_both_provenances() -> None:
    a = mem(
        1,
        "runbook:ledger",
        "The ledger runbook lives in the ops wiki under payments ledger restarts.",
    )
    b = mem(
        2,
        "wiki:ledger",
        "The ledger runbook lives in the ops wiki under payments ledger restarts. "
        "Ask in the payments channel first.",
    )
    other = mem(3, "banner", "The demo banner colour is teal.")
    groups, conflicts = duplicate_groups(
        [a, b, other], POLICY.model_copy(update={"merge_similarity": 0.7})
    )
    assert [[m.id for m in g] for g in groups] == [[1, 2]] and conflicts == []
    p = merge(groups[0], POLICY)
    assert p.accepted and p.loss == 0.0
    assert (
        p.member_ids == (1, 2)
        and "memory:1<events:10>" in p.source
        and "memory:2<events:20>" in p.source
    )
    assert "Ask in the payments channel first." in p.text


def test_duplicates_that_disagree_on_a_number_are_a_conflict_not_a_merge() -> None:
    a = mem(1, "ledger port", "The ledger admin port is 8443 on every node.")
    b = mem(2, "ledger admin port", "The ledger admin port is 9443 on every node.")
    groups, conflicts = duplicate_groups(
        [a, b], POLICY.model_copy(update={"merge_similarity": 0.6})
    )
    assert groups == []
    (c,) = conflicts
    assert c.kind == "conflict" and "memory:1" in c.render() and "memory:2" in c.render()


def test_rewrite_loss_is_capped() -> None:
    prior = [
        "The ledger runbook lives in the ops wiki.",
        "Restarts need the payments lead on the call.",
        "Month-end close freezes ledger deploys.",
        "The ledger admin port is 8443.",
        "Ledger backups run nightly at 02:00.",
    ]
    keeps_all = " ".join(prior)
    drops_two = " ".join(prior[:3])
    assert rewrite_loss(prior, keeps_all) == 0.0
    assert rewrite_loss(prior, drops_two) == 0.4
    assert check_rewrite(prior, keeps_all, POLICY) == (True, 0.0)
    assert check_rewrite(prior, drops_two, POLICY) == (False, 0.4)
    assert check_rewrite(prior, " ".join(prior[:4]), POLICY) == (True, 0.2)  # at the cap
