"""The session-end note's request continues the agent's last request as it was sent, so the
provider reads its tools, system and transcript from cache; only the ask is new."""

from __future__ import annotations

from typing import Any

from wakeful.activities.handoff_note import HEADER, cache_ttl_s, cached_handoff_request

ASK = f"{HEADER}\nsession: s1"


def _count(text: str) -> int:
    return len(text) // 4 + 1


TOOLS = [{"name": "read_file", "input_schema": {"type": "object"}}]


def _anthropic(**extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-6",
        "max_tokens": 8000,
        "tools": TOOLS,
        "system": [
            {"type": "text", "text": "You are scout.", "cache_control": {"type": "ephemeral"}}
        ],
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}],
            }
        ],
        **extra,
    }


def test_an_anthropic_request_keeps_its_prefix_and_breakpoints_and_asks_after_the_reply() -> None:
    window = _anthropic()
    request = cached_handoff_request("anthropic", window, "Done.", ASK, 1024, _count)
    assert request is not None
    assert request["tools"] == window["tools"] and request["system"] == window["system"]
    assert request["messages"][:1] == window["messages"]  # breakpoint kept, nothing moved
    assert request["messages"][1:] == [
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": ASK},
    ]
    assert request["max_tokens"] == 1024 and "tool_choice" not in request
    assert len(window["messages"]) == 1  # the stored window is not changed


def test_anthropic_keeps_its_tool_choice_unless_it_forces_a_call() -> None:
    # The message cache is keyed on tool_choice: an unforced one stays as sent.
    auto = cached_handoff_request(
        "anthropic", _anthropic(tool_choice={"type": "auto"}), "", ASK, 9, _count
    )
    assert auto is not None and auto["tool_choice"] == {"type": "auto"}
    assert auto["messages"][-1] == {"role": "user", "content": ASK}  # no empty reply turn
    forced = cached_handoff_request(
        "anthropic", _anthropic(tool_choice={"type": "any"}), "", ASK, 9, _count
    )
    assert forced is not None and "tool_choice" not in forced


def test_openai_shapes_are_told_to_call_no_tool() -> None:
    chat = {
        "model": "gpt-4o-mini",
        "max_completion_tokens": 8000,
        "tools": [{"type": "function", "function": {"name": "read_file"}}],
        "tool_choice": "required",
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}],
    }
    request = cached_handoff_request("openai", chat, "Done.", ASK, 1024, _count)
    assert request is not None
    assert request["tool_choice"] == "none" and request["max_completion_tokens"] == 1024
    assert request["messages"][:2] == chat["messages"]
    responses = {
        "model": "gpt-4o-mini",
        "max_output_tokens": 8000,
        "input": [{"role": "user", "content": "hi"}],
    }
    request = cached_handoff_request("openai-responses", responses, "Done.", ASK, 1024, _count)
    assert request is not None and "tool_choice" not in request  # no tools, nothing to refuse
    assert request["input"][-1] == {"role": "user", "content": ASK}
    assert request["max_output_tokens"] == 1024


def test_a_request_with_no_turns_is_not_continued() -> None:
    empty = {"model": "m", "max_tokens": 8000, "messages": []}
    assert cached_handoff_request("anthropic", empty, "x", ASK, 9, _count) is None


def test_a_request_with_no_room_for_the_reply_the_ask_and_the_note_is_not_continued() -> None:
    # The window's input filled the context but its output reserve: what is added must fit.
    window = _anthropic(max_tokens=1500)
    assert cached_handoff_request("anthropic", window, "Done.", ASK, 1024, _count) is not None
    long_ask = ASK + "\n" + "x" * 4000  # about 1000 tokens
    assert cached_handoff_request("anthropic", window, "Done.", long_ask, 1024, _count) is None


def test_a_windows_prefix_stays_cached_for_its_longest_breakpoint_ttl() -> None:
    assert cache_ttl_s("anthropic", _anthropic()) == 300  # ephemeral, no ttl: 5 minutes
    hour = _anthropic()
    hour["system"][0]["cache_control"]["ttl"] = "1h"
    assert cache_ttl_s("anthropic", hour) == 3600
    chat = {"model": "gpt-5", "messages": [], "prompt_cache_retention": "24h"}
    assert cache_ttl_s("openai", chat) == 86_400
    assert cache_ttl_s("openai", {"model": "gpt-5", "messages": []}) == 300
