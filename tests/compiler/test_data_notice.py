"""The data notice goes with the first data a window holds, and only then.

A chat with a person (no tool output, evidence, summaries, handoff note or framed wake)
sends no notice at all; once data appears, the notice follows the first of it, so it is
added after the cached prefix and keeps its place as the conversation grows (the prefix
stability across that moment is ``test_replies.test_the_next_window_starts_with_…``).
"""

from __future__ import annotations

import pytest

from wakeful.compiler import BlockKind, GoalKind, Role
from wakeful.compiler.framing import DATA_NOTICE

from .factory import block, goal, pair, snapshot, turn
from .helpers import assert_anthropic_valid, compile_

PROVIDERS = ["anthropic", "openai_chat", "openai_responses"]
RULE = block("rule-1", BlockKind.SYSTEM_RULE, "Answer briefly.", seq=1)
CHAT = [
    RULE,
    turn("t-2", 2, text="Hello there.", wake_id="w1"),
    turn("t-3", 3, Role.ASSISTANT, text="Hi! How can I help?", wake_id="w1"),
    turn("t-4", 4, text="What is a good name for a cat?", wake_id="w2"),
]
A_MESSAGE = goal("What is a good name for a cat?", kind=GoalKind.MESSAGE)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_chat_without_data_sends_no_notice(provider: str) -> None:
    w = compile_(snapshot(CHAT, wake="w2"), goal=A_MESSAGE, provider=provider)
    assert DATA_NOTICE not in w.request_json
    assert "Answer briefly." in w.request_json


def test_the_notice_follows_the_results_of_the_first_call_and_nothing_else() -> None:
    call, result = pair("c-5", 5, wake="w2")
    later_call, later_result = pair("c-7", 7, wake="w2")
    blocks = [*CHAT, call, result, later_call, later_result]
    w = compile_(snapshot(blocks, wake="w2"), goal=A_MESSAGE, provider="anthropic")
    assert_anthropic_valid(w.request)
    assert w.request_json.count(DATA_NOTICE) == 1
    assert DATA_NOTICE not in w.request["system"][0]["text"]
    (first,) = [m for m in w.request["messages"] if "tool_result" in str(m["content"])][:1]
    assert [c["type"] for c in first["content"]] == ["tool_result", "text"]
    assert first["content"][1]["text"] == DATA_NOTICE


@pytest.mark.parametrize("provider", ["openai_chat", "openai_responses"])
def test_openai_gets_the_notice_as_guidance_not_as_the_user(provider: str) -> None:
    call, result = pair("c-5", 5, wake="w2")
    w = compile_(snapshot([*CHAT, call, result], wake="w2"), goal=A_MESSAGE, provider=provider)
    turns = w.request["input" if provider == "openai_responses" else "messages"]
    (notice,) = [t for t in turns if t.get("content") == DATA_NOTICE]
    assert notice["role"] == ("developer" if provider == "openai_responses" else "system")
    assert turns.index(notice) == len(turns) - 1  # right after the tool's result


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_webhook_is_data_and_brings_the_notice(provider: str) -> None:
    w = compile_(snapshot([RULE], wake="w1"), goal=goal("deploy failed"), provider=provider)
    assert w.request_json.count(DATA_NOTICE) == 1
    text = w.request_json
    assert text.index("<wake ") < text.index(DATA_NOTICE)
