from __future__ import annotations

from wakeful.compiler import load_policy

from .factory import WAKE, base_blocks, pair, snapshot
from .helpers import assert_anthropic_valid, compile_


def test_resolved_output_collapses_to_a_note_and_the_pair_stays_valid() -> None:
    call, result = pair("c-30", 30, resolved=True)
    result = result.model_copy(update={"text": "first line of log\n" + "x" * 4000})
    w = compile_(snapshot([*base_blocks(), call, result]))
    row = w.ledger.row("c-30-result")
    assert row is not None and row.status == "collapsed" and row.tokens_freed > 900
    assert w.ledger.row("c-30-call").status == "included"  # type: ignore[union-attr]
    assert "[resolved; grep output of ~" in w.request_json and "first line of log" in w.request_json
    assert "x" * 100 not in w.request_json
    assert_anthropic_valid(w.request)


def test_the_current_wake_and_the_switch_are_respected() -> None:
    call, result = pair("c-live", 30, wake=WAKE, resolved=True)
    w = compile_(snapshot([*base_blocks(), call, result]))
    assert w.ledger.row("c-live-result").status == "included"  # type: ignore[union-attr]
    call, result = pair("c-30", 30, resolved=True)
    off = load_policy("[eviction]\ncollapse_resolved = false\n")
    w2 = compile_(snapshot([*base_blocks(), call, result]), off)
    assert w2.ledger.row("c-30-result").status == "included"  # type: ignore[union-attr]
