"""The quality gate rejects every kind of loss it promises to catch, and passes a faithful
summary."""

from __future__ import annotations

from tests.consolidation.helpers import tool_pair, turn
from wakeful.consolidation.gate import GateInput, run_gate

SPAN = (
    turn(1, "Morning! Can you look at the checkout graphs?"),
    turn(2, "The graphs look calm and the queue drains steadily.", role="assistant"),
    turn(3, "C-3: Do not run a migration unless a backup was taken in the last 24 hours."),
    turn(4, "FYI, the queue version is v2.4.1. We decided to keep INC-4411 open."),
    turn(5, "Checkout p99 settled at 212 ms.", role="assistant"),
    *tool_pair(6, "c1", "2026-03-02T09:00:00Z INFO checkout latency_ms=377 status=200"),
)
FAITHFUL = """Summary of e1..e7:
- C-3: Do not run a migration unless a backup was taken in the last 24 hours.
- FYI, the queue version is v2.4.1.
- [DEC-4] We decided to keep INC-4411 open.
- Checkout p99 settled at 212 ms."""
GATE = GateInput(items=SPAN, promoted_ids=("C-3", "DEC-4"))


def failures(summary: str, span: GateInput = GATE) -> dict[str, tuple[str, ...]]:
    result = run_gate(span, summary)
    return {c.name: c.missing for c in result.checks if not c.passed}


def test_a_faithful_summary_passes() -> None:
    result = run_gate(GATE, FAITHFUL)
    assert result.passed, result.reasons
    assert result.probes == 1  # "What is the queue version?"
    # Tool output numbers (377, the timestamp) are not required: the compiler collapses it.


def test_a_missing_registry_id_fails() -> None:
    assert failures(FAITHFUL.replace("[DEC-4] ", "")) == {"registry_ids": ("DEC-4",)}
    assert failures(FAITHFUL.replace(" INC-4411", " the incident"))["registry_ids"] == ("INC-4411",)


def test_a_changed_version_or_number_fails() -> None:
    lossy = FAITHFUL.replace("v2.4.1", "v2.4").replace("212 ms", "about 215 ms")
    got = failures(lossy)
    assert got["numerals"] == ("212", "v2.4.1")
    assert got["invented"] == ("215", "v2.4")
    assert "probes" in got  # the queue version is no longer answerable


def test_a_number_changed_under_a_citation_is_still_caught() -> None:
    span = GateInput(items=SPAN, promoted_ids=("C-3", "DEC-4"), registry={"C-3": SPAN[2].text})
    # 24 survives through the cited registry entry, but the summary now says 25.
    assert failures(FAITHFUL.replace("24 hours", "25 hours"), span) == {"invented": ("25",)}


def test_a_dropped_negation_fails() -> None:
    lossy = FAITHFUL.replace("Do not run", "Run")
    got = failures(lossy)
    assert list(got) == ["negations"]
    assert any("C-3" in m for m in got["negations"])


def test_a_flipped_polarity_fails_even_when_the_rule_is_also_restated() -> None:
    span = GateInput(
        items=(turn(1, "Never restart the ledger service during month-end close."),),
        promoted_ids=("LB-1",),
    )
    ok = "- [LB-1] Never restart the ledger service during month-end close."
    assert failures(ok, span) == {}
    flipped = ok + "\n- Restart the ledger service during month-end close."
    assert "negations" in failures(flipped, span)


def test_citing_a_registry_entry_counts_as_keeping_its_text() -> None:
    span = GateInput(items=SPAN, promoted_ids=("C-3", "DEC-4"), registry={"C-3": SPAN[2].text})
    cited = FAITHFUL.replace(
        "- C-3: Do not run a migration unless a backup was taken in the last 24 hours.",
        "- C-3 applies (see registry).",
    )
    assert failures(cited, span) == {}
    assert "numerals" in failures(cited)  # without the registry text, 24 is gone


def test_superseded_values_are_exempt() -> None:
    span = GateInput(
        items=(
            turn(1, "FYI, the staging database port is 5433."),
            turn(2, "Correction: the staging database port is now 6543."),
        ),
    )
    only_current = "- Correction: the staging database port is now 6543."
    assert failures(only_current, span) == {"numerals": ("5433",)}
    exempt = GateInput(items=span.items, superseded_values=("5433",))
    assert failures(only_current, exempt) == {}
    marked = only_current + " [superseded: staging database port is now 7000]"
    assert failures(marked, exempt) == {"invented": ("7000",)}
    known = GateInput(items=span.items, superseded_values=("5433",), current_values=("7000",))
    assert failures(marked, known) == {}


def test_an_empty_summary_fails() -> None:
    assert "non_empty" in failures("   ")
