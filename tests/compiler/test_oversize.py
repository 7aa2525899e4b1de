"""A user turn over its share of the window is shown head and tail, with the handle of its
whole text; the rest of the window is as it was (``compiler/oversize.py``)."""

from __future__ import annotations

import json

from wakeful.compiler import Block, Budget, CompiledWindow, WindowPolicy
from wakeful.compiler.blocks import CAPPED_META, ON_DEMAND_META, BlockKind, Role
from wakeful.compiler.ledger import COMPILER_VERSION
from wakeful.compiler.oversize import (
    MIN_EVENT_TOKENS,
    WHOLE_TEXT_META,
    event_token_limit,
    head_and_tail,
    summary_token_limit,
)
from wakeful.tool_results import shorten

from .factory import WAKE, base_blocks, block, snapshot, turn
from .helpers import assert_anthropic_valid, compile_

HOOK = "".join(f"{n:06d} parcel {n} scanned at depot {n % 40}.\n" for n in range(7_000))
SMALL = WindowPolicy.default().model_copy(
    update={"budget": Budget(context_limit=16_384, output_reserve=2_048)}
)
READER = block(
    "tool-read",
    BlockKind.TOOL_SCHEMA,
    "Read a page of a long result.",
    tool_name="read_result",
    tool_input={"type": "object", "properties": {"handle": {"type": "string"}}},
    meta={ON_DEMAND_META: "1"},
)


def blocks_with(hook: str, *, current: bool, handle: str | None = "h-1") -> list[Block]:
    """The factory's history with a webhook turn: the current wake's, or the last wake's
    (followed by the agent's reply and a new ask)."""
    meta = {WHOLE_TEXT_META: handle} if handle else {}
    blocks = [READER, *(b for b in base_blocks() if b.id != "ask")]
    webhook = turn("hook", 15, text=hook, meta=meta, wake_id=WAKE if current else "wake-6")
    if current:
        return [*blocks, webhook]
    reply = turn("t-16", 16, Role.ASSISTANT, text="Noted.", wake_id="wake-6")
    return [*blocks, webhook, reply, turn("ask", 20, text="Status?", wake_id=WAKE)]


def hook_row_tokens(window: CompiledWindow) -> int:
    (row,) = [r for r in window.ledger.rows if r.block_id == "hook"]
    assert row.status == "included"
    return row.tokens


def sent(window: CompiledWindow) -> str:
    """The text of every message the window sends."""
    return "".join(c.get("text", "") for m in window.request["messages"] for c in m["content"])


def tool_names(window: CompiledWindow) -> list[str]:
    return [t["name"] for t in window.request.get("tools", [])]


def test_a_webhook_too_large_for_a_small_window_is_shown_head_and_tail() -> None:
    window = compile_(snapshot(blocks_with(HOOK, current=True)), SMALL)
    assert_anthropic_valid(window.request)
    limit = event_token_limit(SMALL.budget)
    assert limit == int((16_384 - 2_048) * 0.15)  # the ask's share of the input budget
    assert hook_row_tokens(window) <= limit + 16  # (the block's own framing)
    assert window.input_tokens <= SMALL.budget.input_budget
    text = sent(window)
    assert HOOK[:2_000] in text and HOOK[-500:] in text  # its head and its tail...
    assert HOOK[len(HOOK) // 2 : len(HOOK) // 2 + 200] not in text  # ...not its middle
    assert 'read_result(handle="h-1", offset=' in text  # and how to read on
    assert tool_names(window) == ["grep", "read_result"]  # the reader is sent while needed


def test_the_webhook_of_an_earlier_wake_is_shown_the_same_way() -> None:
    window = compile_(snapshot(blocks_with(HOOK, current=False)), SMALL)
    assert_anthropic_valid(window.request)
    assert hook_row_tokens(window) <= event_token_limit(SMALL.budget) + 16
    assert 'read_result(handle="h-1"' in sent(window)


def test_without_a_stored_whole_text_the_note_names_no_handle() -> None:
    window = compile_(snapshot(blocks_with(HOOK, current=True, handle=None)), SMALL)
    text = sent(window)
    assert "characters omitted. ...]" in text and "read_result(" not in text


def test_a_turn_within_its_share_is_sent_whole_and_the_reader_stays_out() -> None:
    short = HOOK[:4_000]  # 1,000 tokens: under the small window's 2,150
    window = compile_(snapshot(blocks_with(short, current=True)), SMALL)
    assert short in sent(window)
    assert tool_names(window) == ["grep"]


def test_the_share_follows_the_budget_and_has_a_floor() -> None:
    assert event_token_limit(Budget()) == int((200_000 - 8_192) * 0.15)
    tiny = Budget(context_limit=2_048, output_reserve=1_024)
    assert event_token_limit(tiny) == MIN_EVENT_TOKENS
    # The default window holds the whole 266k-character webhook's share: 28k tokens of it.
    window = compile_(snapshot(blocks_with(HOOK, current=True)))
    assert event_token_limit(Budget()) - 200 < hook_row_tokens(window) <= 28_771 + 16


def test_the_same_inputs_compile_to_the_same_bytes() -> None:
    snap = snapshot(blocks_with(HOOK, current=False))
    first, second = compile_(snap, SMALL), compile_(snap, SMALL)
    assert first.request_json == second.request_json
    assert first.ledger.compiler_version == COMPILER_VERSION


def test_a_tool_result_is_shortened_in_the_form_it_always_was() -> None:
    text = "x" * 100
    assert (
        shorten(text, 40, "hh")
        == head_and_tail(text, 40, "hh")
        == (
            "x" * 30 + "\n\n[... 60 of 100 characters omitted. Read on with"
            ' read_result(handle="hh", offset=30) ...]\n\n' + "x" * 10
        )
    )
    assert head_and_tail(text, 40, None) == (
        "x" * 30 + "\n\n[... 60 of 100 characters omitted. ...]\n\n" + "x" * 10
    )
    assert CAPPED_META == "capped"


def test_a_summary_stored_over_its_share_is_shown_in_part() -> None:
    # One written before the gate held summaries to their share: the agent is not stuck
    # with it in every window.
    blocks = [
        block("sum-big", BlockKind.SUMMARY, f"Summary of e1..e1:\n{HOOK}", seq=9)
        if b.id == "sum-1"
        else b
        for b in base_blocks()
    ]
    window = compile_(snapshot(blocks))
    (row,) = [r for r in window.ledger.rows if r.block_id == "sum-big"]
    limit = summary_token_limit(WindowPolicy.default().budget)
    assert row.status == "included" and row.tokens <= limit + 16
    text = sent(window) + json.dumps(window.request["system"])
    assert "characters omitted. ...]" in text and HOOK[-300:] in text
