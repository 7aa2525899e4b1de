from __future__ import annotations

from wakeful.compiler import BlockKind, DiffReason, Role, diff_ledgers, load_policy

from .factory import WAKE, base_blocks, block, pair, snapshot, turn
from .helpers import compile_


def test_identical_windows() -> None:
    a = compile_(snapshot()).ledger
    d = diff_ledgers(a, compile_(snapshot()).ledger)
    assert d.identical and d.reason is DiffReason.IDENTICAL and d.cache_hit_through == "rolling"


def test_a_tool_round_in_the_wake_keeps_the_cache_through_the_previous_call() -> None:
    a = compile_(snapshot()).ledger
    b = compile_(snapshot([*base_blocks(), *pair("live", 21, wake=WAKE)])).ledger
    d = diff_ledgers(a, b)
    assert d.reason is DiffReason.ADDED and d.block_id == "live-call" and d.segment == "ask"
    assert d.cache_hit_through == "history" and d.cache_could_hit
    assert d.cached_prefix_tokens > 0


def test_a_changed_rule_is_named_and_busts_the_cache() -> None:
    blocks = base_blocks()
    changed = [
        b.model_copy(update={"text": "Page anyone."}) if b.id == "rule-1" else b for b in blocks
    ]
    d = diff_ledgers(compile_(snapshot(blocks)).ledger, compile_(snapshot(changed)).ledger)
    assert d.reason is DiffReason.CONTENT_CHANGED and d.block_id == "rule-1"
    assert d.segment == "stable" and not d.cache_could_hit


def test_an_eviction_is_explained_with_its_rule() -> None:
    extra = block("ret-2", BlockKind.RETRIEVED, "y" * 4000, seq=9, relevance=0.1)
    policy = load_policy("[budget]\ncontext_limit = 1800\noutput_reserve = 500\n")
    roomy = load_policy("[budget]\ncontext_limit = 9000\noutput_reserve = 500\n")
    a = compile_(snapshot([*base_blocks(), extra]), roomy).ledger
    b = compile_(snapshot([*base_blocks(), extra]), policy).ledger
    d = diff_ledgers(a, b)
    assert d.policy_changed
    assert d.reason is DiffReason.REMOVED and d.block_id == "ret-2" and d.segment == "evidence"
    assert "budget" in d.detail


def test_model_change_is_reported_first() -> None:
    a = compile_(snapshot())
    agent = a.ledger.model
    snap = snapshot()
    other = snap.model_copy(update={"agent": snap.agent.model_copy(update={"model": "x"})})
    d = diff_ledgers(a.ledger, compile_(other).ledger)
    assert d.reason is DiffReason.MODEL_CHANGED and agent in d.detail


def test_ledger_accepts_orchestrator_notes_without_mutation() -> None:
    ledger = compile_(snapshot([*base_blocks(), turn("x", 30, Role.USER)])).ledger
    noted = ledger.with_note("pacing: continue now").with_decision("pacing", "continue")
    assert noted.notes == ("pacing: continue now",)
    assert noted.decisions == {**ledger.decisions, "pacing": "continue"}
    assert ledger.notes == () and "pacing" not in ledger.decisions
    assert type(ledger).model_validate_json(noted.model_dump_json()) == noted


def test_a_block_that_moves_up_is_reported_as_reordered() -> None:
    from wakeful.compiler.diff import _explain
    from wakeful.compiler.ledger import LedgerRow

    def row(block_id: str, position: int) -> LedgerRow:
        return LedgerRow(
            block_id,
            "memory",
            "s",
            "evidence",
            "included",
            "ranked",
            "r",
            "",
            1,
            0,
            position,
            0.0,
            "h",
        )

    a_rows = {"x": row("x", 3)}
    b_rows = {"x": row("x", 1)}
    reason, found, detail = _explain(a_rows["x"], None, a_rows, b_rows)
    assert reason is DiffReason.REORDERED and found.block_id == "x" and "1" in detail
