"""Anthropic caching rules, checked against the prompt-caching documentation.

Each test names the documentation section (platform.claude.com, "Prompt caching") whose
rule or worked example it reproduces. No HTTP here: the rules are pure functions of the
request body, a cache store and the time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from wakeful.testing.simulator.anthropic_cache import (
    AnthropicCacheResult,
    apply_cache,
    parse_request,
)
from wakeful.testing.simulator.state import CacheStore, SimError

EPH = {"type": "ephemeral"}
EPH_1H = {"type": "ephemeral", "ttl": "1h"}
MODEL = "claude-sonnet-4-5"


def run(store: CacheStore, body: dict[str, Any], now: float = 0.0) -> AnthropicCacheResult:
    blocks, breakpoints = parse_request(body)
    return apply_cache(store, model=body["model"], blocks=blocks, breakpoints=breakpoints, now=now)


def total(body: dict[str, Any]) -> int:
    blocks, _ = parse_request(body)
    return sum(b.tokens for b in blocks)


def text(t: str, control: dict[str, Any] | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": t}
    if control:
        block["cache_control"] = control
    return block


def book_body(book: str, question: str, model: str = MODEL) -> dict[str, Any]:
    return {
        "model": model,
        "max_tokens": 256,
        "system": [text("You analyse literary works."), text(book, EPH)],
        "messages": [{"role": "user", "content": question}],
    }


def test_large_context_example_writes_then_reads(text_of: Callable[..., str]) -> None:
    """ "Large context caching example": the first call reports the book as
    ``cache_creation_input_tokens``, a repeat reports the same count as
    ``cache_read_input_tokens``; only the question stays in ``input_tokens``."""
    store = CacheStore()
    first = run(store, book_body(text_of(3000), "Analyse the major themes."))
    assert first.cache_read_input_tokens == 0
    assert first.cache_creation_5m > 3000
    second = run(store, book_body(text_of(3000), "Describe the main characters."), now=10)
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens
    assert second.cache_creation_input_tokens == 0
    assert second.input_tokens < 20
    assert second.input_tokens + second.cache_read_input_tokens == total(
        book_body(text_of(3000), "Describe the main characters.")
    )


def test_change_in_an_early_block_invalidates_everything_after(
    text_of: Callable[..., str],
) -> None:
    """ "What invalidates the cache": tools -> system -> messages is one prefix, so a
    changed tool definition invalidates the system and message caches behind it."""

    def body(tool_desc: str) -> dict[str, Any]:
        return {
            "model": MODEL,
            "max_tokens": 10,
            "tools": [{"name": "t", "description": tool_desc, "input_schema": {}}],
            "system": [text(text_of(2000), EPH)],
            "messages": [{"role": "user", "content": [text(text_of(500, "m"), EPH)]}],
        }

    store = CacheStore()
    run(store, body("v1"))
    assert run(store, body("v1"), now=1).cache_read_input_tokens == total(body("v1"))
    changed = run(store, body("v2"), now=2)
    assert changed.cache_read_input_tokens == 0
    assert changed.cache_creation_input_tokens == total(body("v2"))


def test_tool_choice_change_keeps_the_system_cache(text_of: Callable[..., str]) -> None:
    """ "What invalidates the cache": changing ``tool_choice`` invalidates message caches
    but keeps tools and system cached."""

    def body(choice: dict[str, Any]) -> dict[str, Any]:
        return {
            "model": MODEL,
            "max_tokens": 10,
            "tool_choice": choice,
            "tools": [{"name": "t", "description": "d", "input_schema": {}}],
            "system": [text(text_of(2000), EPH)],
            "messages": [{"role": "user", "content": [text(text_of(1500, "m"), EPH)]}],
        }

    store = CacheStore()
    run(store, body({"type": "auto"}))
    after = run(store, body({"type": "any"}), now=1)
    system_prefix = total(body({"type": "auto"})) - total(
        {"model": MODEL, "messages": body({"type": "auto"})["messages"]}
    )
    assert after.cache_read_input_tokens == system_prefix
    assert after.cache_creation_5m == total(body({"type": "any"})) - system_prefix


def _turns(
    n: int, text_of: Callable[..., str], marks: tuple[int, ...] = ()
) -> list[dict[str, Any]]:
    """``n`` one-block messages (alternating roles); 1-based block numbers in ``marks``
    carry a breakpoint."""
    return [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": [
                text(f"turn {i + 1}: " + text_of(40, f"t{i}"), EPH if (i + 1) in marks else None)
            ],
        }
        for i in range(n)
    ]


def _conversation(messages: list[dict[str, Any]], text_of: Callable[..., str]) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 10, "system": text_of(1200), "messages": messages}


def test_lookback_finds_the_previous_write_within_20_blocks(
    text_of: Callable[..., str],
) -> None:
    """ "How automatic prefix checking works": one breakpoint at the end is enough - the
    next request's breakpoint checks earlier block boundaries and reads the prefix the
    previous request wrote."""
    store = CacheStore()
    first = _conversation(_turns(30, text_of, marks=(30,)), text_of)
    run(store, first)
    grown = _conversation(_turns(31, text_of, marks=(31,)), text_of)
    result = run(store, grown, now=1)
    assert result.cache_read_input_tokens == total(first)
    assert result.cache_creation_5m == total(grown) - total(first)


def test_lookback_gives_up_after_20_blocks(text_of: Callable[..., str]) -> None:
    """ "Important limitation": the check only looks back about 20 content blocks from each
    explicit breakpoint; earlier writes are found only with another breakpoint nearer."""
    store = CacheStore()
    run(store, _conversation(_turns(30, text_of, marks=(30,)), text_of))
    far = _conversation(_turns(51, text_of, marks=(51,)), text_of)
    assert run(store, far, now=1).cache_read_input_tokens == 0

    store = CacheStore()
    first = _conversation(_turns(30, text_of, marks=(30,)), text_of)
    run(store, first)
    bridged = _conversation(_turns(51, text_of, marks=(35, 51)), text_of)
    assert run(store, bridged, now=1).cache_read_input_tokens == total(first)


def test_modified_early_block_misses_despite_lookback(text_of: Callable[..., str]) -> None:
    """Lookback only finds exact prefixes: editing block 5 of 30 leaves no boundary within
    the 20 checked (30 down to 11) that matches an earlier write."""
    store = CacheStore()
    run(store, _conversation(_turns(30, text_of, marks=(30,)), text_of))
    edited = _turns(30, text_of, marks=(30,))
    edited[4]["content"][0]["text"] += " (edited)"
    assert run(store, _conversation(edited, text_of), now=1).cache_read_input_tokens == 0


def test_fifth_breakpoint_is_a_400_with_anthropics_message() -> None:
    """ "Cache limitations": up to 4 breakpoints; the API rejects a 5th."""
    body = {
        "model": MODEL,
        "max_tokens": 1,
        "system": [text(f"s{i}", EPH) for i in range(5)],
        "messages": [{"role": "user", "content": "hi"}],
    }
    with pytest.raises(SimError) as err:
        parse_request(body)
    assert err.value.status == 400
    assert err.value.message == (
        "A maximum of 4 blocks with cache_control may be provided. Found 5."
    )


def test_automatic_caching_takes_a_breakpoint_slot() -> None:
    """ "Automatic caching": the top-level ``cache_control`` uses one of the 4 slots unless
    the last cacheable block is already marked."""
    four = [text(f"s{i}", EPH) for i in range(4)]
    body = {
        "model": MODEL,
        "max_tokens": 1,
        "cache_control": EPH,
        "system": four,
        "messages": [{"role": "user", "content": "hi"}],
    }
    with pytest.raises(SimError, match="Found 5"):
        parse_request(body)
    body["messages"] = [{"role": "user", "content": [text("hi", EPH)]}]
    body["system"] = four[:3]
    _, breakpoints = parse_request(body)
    assert len(breakpoints) == 4 and not any(bp.automatic for bp in breakpoints)


def test_automatic_breakpoint_moves_forward_with_the_conversation(
    text_of: Callable[..., str],
) -> None:
    """ "Automatic caching" multi-turn example: each request caches up to its last block,
    and the next request reads what the previous one wrote."""
    store = CacheStore()
    turns = [{"role": "user", "content": text_of(1500, "q1")}]
    first = {
        "model": MODEL,
        "max_tokens": 5,
        "cache_control": EPH,
        "system": "Be brief.",
        "messages": turns,
    }
    assert run(store, first).cache_creation_5m == total(first)
    turns2 = [
        *turns,
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "and then?"},
    ]
    second = {**first, "messages": turns2}
    result = run(store, second, now=1)
    assert result.cache_read_input_tokens == total(first)
    assert result.cache_creation_5m == total(second) - total(first)


def test_ttl_order_violation_names_the_block() -> None:
    """ "Mixing different TTLs": longer-TTL entries must come before shorter ones."""
    body = {
        "model": MODEL,
        "max_tokens": 1,
        "tools": [{"name": "t", "input_schema": {}, "cache_control": EPH}],
        "system": [text("rules", EPH_1H)],
        "messages": [{"role": "user", "content": "hi"}],
    }
    with pytest.raises(SimError) as err:
        parse_request(body)
    assert err.value.message.startswith(
        "system.0.cache_control.ttl: a ttl='1h' cache_control block must not come after a "
        "ttl='5m' cache_control block."
    )


def test_mixed_ttl_billing_positions_a_b_c(text_of: Callable[..., str]) -> None:
    """ "Mixing different TTLs": A = highest hit, B = highest 1h block after A, C = last
    breakpoint; billed as reads A, 1h writes B-A, 5m writes C-B."""

    def body(tail: str) -> dict[str, Any]:
        return {
            "model": MODEL,
            "max_tokens": 1,
            "system": [text(text_of(1500, "stable"), EPH_1H)],
            "messages": [
                {"role": "user", "content": [text(text_of(1200, tail), EPH)]},
                {"role": "user", "content": "?"},
            ],
        }

    store = CacheStore()
    b_tokens = total({"model": MODEL, "system": body("x")["system"], "messages": []})
    c_tokens = total(body("x")) - total(
        {"model": MODEL, "messages": [{"role": "user", "content": "?"}]}
    )
    cold = run(store, body("x"))
    assert (cold.cache_read_input_tokens, cold.cache_creation_1h, cold.cache_creation_5m) == (
        0,
        b_tokens,
        c_tokens - b_tokens,
    )
    warm = run(store, body("y"), now=1)  # the 1h prefix hits, the 5m tail changed
    assert warm.cache_read_input_tokens == b_tokens
    assert warm.cache_creation_1h == 0
    assert warm.cache_creation_5m == total(body("y")) - b_tokens - warm.input_tokens


@pytest.mark.parametrize(
    ("model", "prefix_tokens", "cached"),
    [
        ("claude-sonnet-4-5", 1100, True),
        ("claude-haiku-4-5", 1100, False),
        ("claude-haiku-4-5", 4200, True),
        ("claude-opus-4-6", 2000, False),
        ("claude-opus-5", 600, True),
        ("claude-3-haiku-20240307", 1500, False),
    ],
)
def test_minimum_cacheable_length_is_per_model(
    model: str, prefix_tokens: int, cached: bool, text_of: Callable[..., str]
) -> None:
    """ "Cache limitations": shorter prefixes than the model's minimum are processed
    without caching and without an error."""
    body = book_body(text_of(prefix_tokens), "q", model=model)
    result = run(CacheStore(), body)
    assert (result.cache_creation_input_tokens > 0) is cached
    if not cached:
        assert result.input_tokens == total(body)


def test_five_minute_ttl_is_refreshed_on_hit_then_expires(
    text_of: Callable[..., str],
) -> None:
    """ "Cache lifetime": 5 minutes by default, refreshed for free each time it is used."""
    store, body = CacheStore(), book_body(text_of(2000), "q")
    run(store, body, now=0)
    assert run(store, body, now=299).cache_read_input_tokens > 0
    assert run(store, body, now=598).cache_read_input_tokens > 0  # refreshed at 299
    expired = run(store, body, now=899)
    assert expired.cache_read_input_tokens == 0 and expired.cache_creation_5m > 0
    assert store.evictions == 1


def test_one_hour_ttl_outlives_five_minutes(text_of: Callable[..., str]) -> None:
    """ "1-hour cache duration": ``ttl: "1h"`` entries survive gaps a 5m entry would not."""
    store = CacheStore()
    body = book_body(text_of(2000), "q")
    body["system"][1]["cache_control"] = EPH_1H
    assert run(store, body, now=0).cache_creation_1h > 0
    assert run(store, body, now=1800).cache_read_input_tokens > 0
    assert run(store, body, now=1800 + 3601).cache_read_input_tokens == 0
