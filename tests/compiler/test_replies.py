"""The model's turns are sent back as the provider returned them, in the current wake and
after the wake has become history; a tool wake that ends leaves the next call's window
starting with the exact bytes of the wake's last request.

The blocks are what ``activities.wake.record_reply`` stores: one event per reply block in
the provider's order, a call's text its arguments as the provider spelled them (here not
canonical: spaces, keys out of order), every block tagged ``meta["reply"]``.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from wakeful.compiler import Block, BlockKind, EstimatingCounter, Role
from wakeful.compiler.canonical import canonical_json
from wakeful.compiler.facts import BLOCK_OVERHEAD
from wakeful.compiler.framing import DATA_NOTICE
from wakeful.compiler.window import CompiledWindow

from .factory import block, snapshot, turn
from .helpers import assert_anthropic_valid, compile_, without_cache_markers

PROVIDERS = ["anthropic", "openai_chat", "openai_responses"]
ARGS_1 = '{"path": "notes/a.md", "limit": 5}'  # as a provider spelled them
ARGS_2 = '{"path": "notes/b.md"}'


def _said(id: str, seq: int, wake: str, reply: int, text: str) -> Block:
    return turn(id, seq, Role.ASSISTANT, text=text, wake_id=wake, meta={"reply": str(reply)})


def _call(id: str, seq: int, wake: str, reply: int, args: str) -> Block:
    return block(
        f"{id}-call",
        BlockKind.TOOL_CALL,
        args,
        seq=seq,
        role=Role.ASSISTANT,
        tool_call_id=id,
        tool_name="read_file",
        tool_input=json.loads(args),
        wake_id=wake,
        meta={"reply": str(reply)},
    )


def _result(id: str, seq: int, wake: str) -> Block:
    return block(
        f"{id}-result",
        BlockKind.TOOL_RESULT,
        f"contents of {id}",
        seq=seq,
        role=Role.USER,
        tool_call_id=id,
        tool_name="read_file",
        wake_id=wake,
    )


def _blocks(text_after: bool) -> list[Block]:
    """An earlier wake w1, the tool wake w2 (one reply with text and two calls — and text
    after them where the provider allows it — then a text reply), and w3's ask."""
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    out = [
        block(
            "tool-read",
            BlockKind.TOOL_SCHEMA,
            "Read a file.",
            tool_name="read_file",
            tool_input=schema,
        ),
        block("rule-1", BlockKind.SYSTEM_RULE, "Read before answering.", seq=1),
        turn("w1-ask", 2, text="Hello.", wake_id="w1"),
        _said("w1-r0", 3, "w1", 0, "Hi. What shall I read?"),
        turn("w2-ask", 10, text="Read notes/a.md and notes/b.md.", wake_id="w2"),
        _said("w2-r0-text", 11, "w2", 0, "Let me call read_file first."),
        _call("c1", 12, "w2", 0, ARGS_1),
        _call("c2", 13, "w2", 0, ARGS_2),
    ]
    if text_after:
        out.append(_said("w2-r0-after", 14, "w2", 0, "Reading both."))
    out += [
        _result("c1", 15, "w2"),
        _result("c2", 16, "w2"),
        _said("w2-r1", 17, "w2", 1, "Both files are short."),
        turn("w3-ask", 18, text="Thanks. Anything else?", wake_id="w3"),
    ]
    return out


def _compile(provider: str, upto: int, wake: str) -> CompiledWindow:
    blocks = [b for b in _blocks(provider != "openai_chat") if b.seq <= upto]
    return compile_(snapshot(blocks, wake=wake), provider=provider)


def _turns(provider: str, request: dict[str, Any]) -> list[Any]:
    return without_cache_markers(
        request["input"] if provider == "openai_responses" else request["messages"]
    )


def _expected_reply(provider: str) -> list[Any]:
    """Reply 0 of w2 and the results of its calls, as the provider must see them again."""
    if provider == "anthropic":
        return [
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Let me call read_file first."},
                    {
                        "type": "tool_use",
                        "id": "c1",
                        "name": "read_file",
                        "input": {"path": "notes/a.md", "limit": 5},
                    },
                    {
                        "type": "tool_use",
                        "id": "c2",
                        "name": "read_file",
                        "input": {"path": "notes/b.md"},
                    },
                    {"type": "text", "text": "Reading both."},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "c1", "content": "contents of c1"},
                    {"type": "tool_result", "tool_use_id": "c2", "content": "contents of c2"},
                    # the first data in the window: the data notice follows the results
                    {"type": "text", "text": DATA_NOTICE},
                ],
            },
        ]
    if provider == "openai_chat":
        return [
            {
                "role": "assistant",
                "content": "Let me call read_file first.",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": ARGS_1},
                    },
                    {
                        "id": "c2",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": ARGS_2},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "contents of c1"},
            {"role": "tool", "tool_call_id": "c2", "content": "contents of c2"},
        ]
    return [
        {"role": "assistant", "content": "Let me call read_file first."},
        {"type": "function_call", "call_id": "c1", "name": "read_file", "arguments": ARGS_1},
        {"type": "function_call", "call_id": "c2", "name": "read_file", "arguments": ARGS_2},
        {"role": "assistant", "content": "Reading both."},
        {"type": "function_call_output", "call_id": "c1", "output": "contents of c1"},
        {"type": "function_call_output", "call_id": "c2", "output": "contents of c2"},
    ]


def _final(provider: str) -> Any:
    if provider == "anthropic":
        return {"role": "assistant", "content": [{"type": "text", "text": "Both files are short."}]}
    return {"role": "assistant", "content": "Both files are short."}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_reply_is_sent_back_block_for_block_in_the_wake_and_as_history(provider: str) -> None:
    expected = _expected_reply(provider)
    during = _turns(provider, _compile(provider, 16, "w2").request)  # the wake's 2nd call
    after = _turns(provider, _compile(provider, 18, "w3").request)  # the next wake's 1st
    for turns in (during, after):
        start = next(
            n
            for n, t in enumerate(turns)
            if t.get("role") == "assistant" and "Let me call" in canonical_json(t)
        )
        assert turns[start : start + len(expected)] == expected
    assert after[len(during)] == _final(provider)
    for turns in (during, after):  # no assistant text the model never wrote
        assert set(_assistant_texts(turns)) <= WRITTEN


WRITTEN = {"Hi. What shall I read?", "Let me call read_file first.", "Reading both."}
WRITTEN |= {"Both files are short."}


def _assistant_texts(turns: list[Any]) -> list[str]:
    out: list[str] = []
    for t in turns:
        if t.get("role") != "assistant" or t.get("content") is None:
            continue
        content = t["content"]
        if isinstance(content, str):
            out.append(content)
        else:
            out += [c["text"] for c in content if c["type"] == "text"]
    return out


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_next_window_starts_with_the_bytes_of_the_last_request(provider: str) -> None:
    """Call N (the tool wake's last) is a prefix of call N+1 (the next wake's first), and
    each call of the tool wake is a prefix of the next: nothing before new content moves."""
    calls = [
        _compile(provider, 10, "w2"),  # w2's first call
        _compile(provider, 16, "w2"),  # w2's last call: after the results
        _compile(provider, 18, "w3"),  # w3's first call: w2 is history now
    ]
    for earlier, later in itertools.pairwise(calls):
        a, b = without_cache_markers(earlier.request), without_cache_markers(later.request)
        key = "input" if provider == "openai_responses" else "messages"
        turns_a, turns_b = canonical_json(a.pop(key)), canonical_json(b.pop(key))
        assert turns_b.startswith(turns_a[:-1])  # the same bytes, up to the closing ]
        assert len(turns_b) > len(turns_a)
        assert a == b  # tools, system, instructions, cache key: unchanged
        if provider == "anthropic":
            assert_anthropic_valid(later.request)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_call_is_charged_its_arguments_once(provider: str) -> None:
    """The ledger charges a call what is sent: its arguments (once), name, id, framing."""
    counter = EstimatingCounter()
    rows = {r.block_id: r for r in _compile(provider, 18, "w3").ledger.rows}
    for call, args in (("c1", ARGS_1), ("c2", ARGS_2)):
        sent = counter.count(args) + counter.count("read_file") + counter.count(call)
        assert rows[f"{call}-call"].tokens == sent + BLOCK_OVERHEAD
