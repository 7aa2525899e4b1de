"""Deltas, superseded marks, staleness, re-verification and decay."""

from __future__ import annotations

from datetime import timedelta

from tests.consolidation.helpers import T0, turn
from wakeful.consolidation.facts import extract_facts
from wakeful.consolidation.hygiene import (
    MemoryView,
    annotate,
    decay,
    deltas,
    expired_deltas,
    reverify,
    stale,
    superseded_facts,
)
from wakeful.consolidation.policy import ConsolidationPolicy

POLICY = ConsolidationPolicy()


def mem(
    i: int, text: str, key: str = "staging database port", *, days: float = 0, **kw: object
) -> MemoryView:
    return MemoryView(
        id=i, key=key, text=text, source=f"events:{i}", captured_at=T0 + timedelta(days=days), **kw
    )  # type: ignore[arg-type]


CHAIN = [
    mem(1, "FYI, the staging database port is 5433.", invalidated_at=T0 + timedelta(days=1)),
    mem(2, "Correction: the staging database port is now 6543.", days=1, supersedes=1),
]


def test_a_changed_value_becomes_a_structured_delta() -> None:
    (d,) = deltas(CHAIN, T0 + timedelta(days=2), POLICY)
    assert (d.kind, d.key, d.old, d.new, d.old_source, d.new_source) == (
        "changed",
        "staging database port",
        "5433",
        "6543",
        "memory:1",
        "memory:2",
    )
    assert "5433 is superseded" in d.render()
    assert deltas(CHAIN, T0 + timedelta(days=40), POLICY) == []  # outside delta_window
    delta = mem(3, d.render(), key="delta:changed:staging database port", days=1)
    assert expired_deltas([delta], T0 + timedelta(days=40), POLICY) == [3]


def test_old_summaries_get_superseded_values_marked() -> None:
    facts = superseded_facts(CHAIN)
    assert [(f.old, f.new) for f in facts] == [("5433", "6543")]
    text = (
        "Summary:\n- FYI, the staging database port is 5433.\n"
        "- FYI, the canary database port is 5433."
    )
    marked = annotate(text, facts)
    assert marked is not None
    lines = marked.split("\n")
    assert lines[1].endswith("[superseded: staging database port is now 6543]")
    assert "superseded" not in lines[2]  # another subject with the same value stays as it is
    assert annotate(marked, facts) is None  # marking twice changes nothing
    revoked = annotate("- [C-7] Only on-call may restart workers.", [], [("C-7", "C-21")])
    assert (
        revoked
        == "- [C-7] Only on-call may restart workers. [superseded: C-7 was replaced by C-21]"
    )


def test_stale_memories_are_reverified_from_fresh_tool_output() -> None:
    old = mem(5, "FYI, the staging database port is 6543.", days=0)
    now = T0 + timedelta(days=20)
    assert stale([old], now, POLICY) == [old]
    marked = old.model_copy(update={"verification": "stale"})
    assert stale([marked], now, POLICY) == [marked]  # still re-checked: evidence may arrive
    same = extract_facts([turn(30, "staging database port: 6543", minutes=60 * 24 * 19)])
    changed = extract_facts([turn(31, "staging database port: 7000", minutes=60 * 24 * 19)])
    older = extract_facts([turn(1, "staging database port: 7000", minutes=-5)])
    assert reverify(old, same).outcome == "confirmed"
    verdict = reverify(old, changed)
    assert (
        verdict.outcome == "changed"
        and verdict.evidence is not None
        and verdict.evidence.value == "7000"
    )
    assert (
        reverify(old, older).outcome == "unknown"
    )  # evidence older than the memory proves nothing


def test_unused_unimportant_memories_decay() -> None:
    low = mem(1, "the demo banner colour is teal", key="banner", importance=0.3)
    high = mem(2, "FYI, the staging database port is 6543.", importance=0.9)
    now = T0 + timedelta(days=60)  # two half-lives: 0.3 -> 0.075 < floor 0.1
    assert decay([low, high], {}, now, POLICY) == [(1, 0.075)]
    assert decay([low, high], {1: T0 + timedelta(days=50)}, now, POLICY) == []  # used recently
