"""Live tool output (``compiler/live_output.py``): a stale, a repeated or (when asked) an
old result becomes a note in place, its call kept as the model made it; never in the
current wake; the ledger names the rule."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from wakeful.compiler import BlockKind, GoalKind, Role, load_policy
from wakeful.compiler.blocks import Block

from .factory import NOW, WAKE, block, goal, turn
from .factory import snapshot as make_snapshot
from .helpers import assert_anthropic_valid, compile_

ASK = goal("What is the state of checkout?", kind=GoalKind.MESSAGE)
REPEATS = "[eviction]\nresolve_repeated_calls = true\n"
OUTPUT = "\n".join(f"line {k}: checkout deploy 41 healthy" for k in range(40))


def _call(n: int, tool: str, args: dict[str, Any], wake: str, **result: Any) -> list[Block]:
    return [
        block(f"call-{n}", BlockKind.TOOL_CALL, "", seq=10 * n, role=Role.ASSISTANT,
              tool_call_id=f"tc-{n}", tool_name=tool, tool_input=args, wake_id=wake),
        block(f"result-{n}", BlockKind.TOOL_RESULT, result.pop("text", OUTPUT), seq=10 * n + 1,
              role=Role.USER, tool_call_id=f"tc-{n}", tool_name=tool, wake_id=wake, **result),
    ]  # fmt: skip


def _compile(*blocks: Block, policy: str = ""):  # type: ignore[no-untyped-def]
    schema = {"type": "object", "properties": {"service": {"type": "string"}}}
    tools = [
        block(f"tool:{name}", BlockKind.TOOL_SCHEMA, name, tool_name=name, tool_input=schema)
        for name in ("status", "grep")
    ]
    now = turn("now", 10_000, text=ASK.text, wake_id=WAKE)
    return compile_(make_snapshot([*tools, *blocks, now]), load_policy(policy), goal=ASK)


def _row(w, block_id: str) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    row = w.ledger.row(block_id)
    assert row is not None, block_id
    return row.status, row.rule


def _results(w) -> dict[str, str]:  # type: ignore[no-untyped-def]
    blocks = [b for m in w.request["messages"] if isinstance(m["content"], list)
              for b in m["content"]]  # fmt: skip
    return {b["tool_use_id"]: b["content"] for b in blocks if b["type"] == "tool_result"}


def test_a_stale_result_becomes_a_note_and_its_call_stays_as_made() -> None:
    went = NOW - timedelta(minutes=50)
    stale = _call(1, "status", {"service": "checkout"}, "w-1", stale_after=went)
    for mode in ("exclude", "flag"):
        w = _compile(turn("ask-1", 1, wake_id="w-1"), *stale,
                     policy=f'[staleness]\nmode = "{mode}"\n')  # fmt: skip
        assert _row(w, "call-1")[0] == "included"  # the model's turn is sent as it was
        assert _row(w, "result-1") == ("collapsed", "tool.fresh_for")
        note = _results(w)["tc-1"]
        assert re.fullmatch(
            r"\[status output of ~\d+ tokens went out of date at 2025-06-01 11:10:00 UTC;"
            r" call status again for the current state\]",
            note,
        ), note
        assert "healthy" not in note  # nothing of what is no longer true
        assert_anthropic_valid(w.request)


def test_a_fresh_result_and_a_short_stale_one() -> None:
    fresh = _call(1, "status", {"service": "a"}, "w-1", stale_after=NOW + timedelta(minutes=1))
    short = _call(2, "status", {"service": "b"}, "w-1", text="green",
                  stale_after=NOW - timedelta(seconds=1))  # fmt: skip
    w = _compile(turn("ask-1", 1, wake_id="w-1"), *fresh, *short)
    assert _row(w, "result-1")[0] == "included" and _results(w)["tc-1"] == OUTPUT
    # Its note is longer than "green", and still replaces it: green is no longer true.
    assert _row(w, "result-2") == ("collapsed", "tool.fresh_for")
    assert "went out of date" in _results(w)["tc-2"]


def test_a_repeated_call_collapses_the_earlier_result_wherever_the_repeat_is() -> None:
    first = _call(1, "grep", {"q": "retry", "path": "src"}, "w-1")
    other = _call(2, "grep", {"q": "timeout", "path": "src"}, "w-1")
    again = _call(3, "grep", {"path": "src", "q": "retry"}, "w-2")  # same arguments
    history = [turn("ask-1", 1, wake_id="w-1"), *first, *other, turn("ask-2", 25, wake_id="w-2")]
    assert _row(_compile(*history, *again), "result-1")[0] == "included"  # off by default
    w = _compile(*history, *again, policy=REPEATS)
    assert _row(w, "result-1") == ("collapsed", "eviction.resolve_repeated_calls")
    assert _results(w)["tc-1"].startswith("[grep output of ~")
    assert "superseded by a later call with the same arguments] line 0" in _results(w)["tc-1"]
    assert _row(w, "result-2")[0] == _row(w, "result-3")[0] == "included"
    # A repeat inside the current wake settles a result in the history just the same.
    now = [b.model_copy(update={"wake_id": WAKE, "seq": b.seq + 20_000}) for b in again]
    w = _compile(turn("ask-1", 1, wake_id="w-1"), *first, *now, policy=REPEATS)
    assert _row(w, "result-1") == ("collapsed", "eviction.resolve_repeated_calls")


def test_the_current_wake_is_never_settled() -> None:
    mine = [
        *_call(1, "status", {"service": "a"}, WAKE, stale_after=NOW - timedelta(minutes=1)),
        *_call(2, "grep", {"q": "x"}, WAKE),
        *_call(3, "grep", {"q": "x"}, WAKE),
    ]
    w = _compile(*[b.model_copy(update={"seq": b.seq + 20_000}) for b in mine], policy=REPEATS)
    assert [_row(w, f"result-{n}")[1] for n in (1, 2, 3)] == ["snapshot.current_wake_id"] * 3


def test_results_some_asks_back_are_settled_only_when_the_policy_asks() -> None:
    history = [
        turn("ask-1", 1, wake_id="w-1"), *_call(1, "grep", {"q": "a"}, "w-1"),
        turn("ask-2", 20, wake_id="w-2"), *_call(2, "grep", {"q": "b"}, "w-2"),
        turn("ask-3", 30, wake_id="w-3"), *_call(3, "grep", {"q": "c"}, "w-3"),
    ]  # fmt: skip
    assert all(_row(_compile(*history), f"result-{n}")[0] == "included" for n in (1, 2, 3))
    w = _compile(*history, policy="[eviction]\nresolve_after_asks = 2\n")
    # result-1 has asks 2, 3 and the current one after it; result-2 two; result-3 one.
    assert [_row(w, f"result-{n}") for n in (1, 2, 3)] == [
        ("collapsed", "eviction.resolve_after_asks"),
        ("collapsed", "eviction.resolve_after_asks"),
        ("included", "budget.allocations.recent"),
    ]
