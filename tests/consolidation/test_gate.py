"""The quality gate rejects every kind of loss it promises to catch, and passes a faithful
summary."""

from __future__ import annotations

from tests.consolidation.helpers import tool_pair, turn
from wakeful.compiler.policy import Budget
from wakeful.consolidation.gate import GateInput, estimate_tokens, run_gate, summary_token_limit
from wakeful.consolidation.items import SpanItem

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


# One webhook event of numbered log lines: an extractive summary that keeps every line
# with a number keeps most of it, and passes every loss check.
LINES = [f"{n:06d} parcel scanned at depot {n % 40}.\n" for n in range(500)]
LOG = "".join(LINES)


def test_a_summary_as_large_as_its_span_fails_though_it_loses_nothing() -> None:
    span = GateInput(items=(turn(1, LOG),))
    everything = "Summary of e1..e1:\n" + "".join(f"- {line}" for line in LINES)
    result = run_gate(span, everything)  # every number and sentence kept: no loss at all
    assert [c.name for c in result.checks if not c.passed] == ["size"]
    assert "size" not in failures("".join(LINES[:5]), span)


def test_a_summary_not_much_smaller_than_its_span_fails() -> None:
    span = GateInput(items=(turn(1, LOG),))
    kept = "".join(LINES[:375])  # three quarters of the event, numbers and all
    got = failures(kept, span)
    assert list(got) == ["size"]  # (not read further: the dropped lines go unlisted)
    (why,) = got["size"]
    assert why.endswith(f"over 50% of the {run_tokens(LOG):,} it replaces")
    result = run_gate(span, kept)
    assert not result.passed
    assert result.reasons == [f"size: {why}"]  # recorded as the commit records any rejection


def test_a_summary_over_its_share_of_the_window_fails() -> None:
    limit = summary_token_limit(Budget(context_limit=16_384, output_reserve=4_096))
    assert limit == int((16_384 - 4_096) * 0.10 * 0.5)  # half the summaries allocation
    span = GateInput(items=(turn(1, LOG),), window_tokens=limit)
    summary = LOG[:4_000]  # well under half the span, but 1,000 tokens
    assert failures(summary, span)["size"] == (
        f"{run_tokens(summary):,} tokens, over its share of the window ({limit:,})",
    )
    assert "size" not in failures(summary, GateInput(items=(turn(1, LOG),)))


def test_a_rollup_is_held_to_the_size_of_the_summaries_it_merges() -> None:
    kids = (summary_item(1, LOG[:8_000]), summary_item(2, LOG[8_000:16_000]))
    assert "size" in failures(LOG[:12_000], GateInput(items=kids))
    assert "size" not in failures(LOG[:6_000], GateInput(items=kids))


def test_a_short_summary_of_a_short_span_passes_the_size_check() -> None:
    # Two lines restating one: over half of it, but a few tokens cost any window little.
    assert "size" not in failures(FAITHFUL)


def run_tokens(text: str) -> int:
    return estimate_tokens(text)


def summary_item(n: int, text: str) -> SpanItem:
    return SpanItem(id=n, kind="summary", text=text, at=turn(1, "x").at)
