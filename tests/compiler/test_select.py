from __future__ import annotations

from wakeful.compiler import BlockKind, Role

from .factory import WAKE, base_blocks, block, pair, snapshot, turn
from .helpers import assert_anthropic_valid, compile_

# Evidence follows the ask; these tests are about the ask itself.
EVIDENCE_KINDS = (BlockKind.MEMORY, BlockKind.RETRIEVED)


def test_current_wake_is_the_tail_in_seq_order() -> None:
    blocks = [*base_blocks(), *pair("live", 21, wake=WAKE)]
    w = compile_(snapshot(blocks))
    included = [r for r in w.ledger.included() if r.segment == "ask"]
    assert [r.block_id for r in included] == ["ask", "live-call", "live-result"]
    assert all(r.reason == "current_wake" for r in included)
    assert w.request["messages"][-1]["content"][0]["type"] == "tool_result"
    assert_anthropic_valid(w.request)


def test_goal_becomes_the_ask_when_the_wake_has_no_blocks() -> None:
    blocks = [b for b in base_blocks() if b.wake_id is None and b.kind not in EVIDENCE_KINDS]
    w = compile_(snapshot(blocks))
    row = w.ledger.row("ask:wake-7")
    assert row is not None and row.kind == "current_ask" and row.segment == "ask"
    last = w.request["messages"][-1]["content"][-1]["text"]
    assert last.startswith('<wake kind="webhook">')  # a webhook payload is data
    assert_anthropic_valid(w.request)


def test_an_assistant_ending_gets_the_goal_appended() -> None:
    kept = [b for b in base_blocks() if b.kind not in EVIDENCE_KINDS]
    blocks = [*kept, turn("reply", 21, Role.ASSISTANT, wake_id=WAKE)]
    w = compile_(snapshot(blocks))
    assert w.ledger.included()[-1].block_id == "ask:wake-7"
    assert_anthropic_valid(w.request)


def test_orphans_are_excluded_even_from_the_tail() -> None:
    call, _ = pair("lost", 21, wake=WAKE)
    _, result = pair("stray", 15)
    w = compile_(snapshot([*base_blocks(), call, result]))
    assert w.ledger.row("lost-call").reason == "orphan_tool_call"  # type: ignore[union-attr]
    assert w.ledger.row("stray-result").reason == "orphan_tool_result"  # type: ignore[union-attr]
    assert_anthropic_valid(w.request)


def test_a_pair_straddling_the_wake_moves_into_the_tail() -> None:
    call, result = pair("edge", 18)
    result = result.model_copy(update={"wake_id": WAKE})
    w = compile_(snapshot([*base_blocks(), call, result]))
    rows = {r.block_id: r for r in w.ledger.included()}
    assert rows["edge-call"].segment == rows["edge-result"].segment == "ask"
    assert_anthropic_valid(w.request)


def test_duplicate_ids_are_a_user_error() -> None:
    import pytest

    from wakeful.errors import UserError

    blocks = [*base_blocks(), block("mem-1", BlockKind.MEMORY, "again")]
    with pytest.raises(UserError, match="mem-1"):
        compile_(snapshot(blocks))
