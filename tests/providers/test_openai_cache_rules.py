"""OpenAI automatic caching rules, checked against the prompt-caching guide.

Each test names the guide section (developers.openai.com, "Prompt caching") it follows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wakeful.testing.simulator.openai_cache import (
    OpenAICacheResult,
    apply_cache,
    chat_prompt_tokens,
    responses_prompt_tokens,
)
from wakeful.testing.simulator.state import CacheStore


def chat(system: str, user: str, **extra: Any) -> dict[str, Any]:
    return {
        "model": "gpt-4o",
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        **extra,
    }


def run(
    store: CacheStore,
    body: dict[str, Any],
    now: float = 0.0,
    tokens_of: Callable[[dict[str, Any]], list[int]] = chat_prompt_tokens,
) -> OpenAICacheResult:
    """Apply the cache rules to the request ``body`` (a Chat Completions body unless
    ``tokens_of`` reads another API's) at time ``now``."""
    return apply_cache(
        store,
        model=body["model"],
        tokens=tokens_of(body),
        prompt_cache_key=body.get("prompt_cache_key"),
        retention=body.get("prompt_cache_retention"),
        now=now,
    )


def shared_prefix(a: dict[str, Any], b: dict[str, Any]) -> int:
    ta, tb = chat_prompt_tokens(a), chat_prompt_tokens(b)
    n = 0
    while n < min(len(ta), len(tb)) and ta[n] == tb[n]:
        n += 1
    return n


def test_prompts_under_1024_tokens_are_never_cached(text_of: Callable[..., str]) -> None:
    """ "How it works": caching is enabled for prompts of 1024 tokens or longer;
    shorter ones still report ``cached_tokens`` as 0."""
    store, body = CacheStore(), chat(text_of(600), "hi")
    assert len(chat_prompt_tokens(body)) < 1024
    run(store, body)
    assert run(store, body, now=1).cached_tokens == 0


def test_hits_come_in_128_token_increments_from_1024(text_of: Callable[..., str]) -> None:
    """ "Requirements": cache hits occur in increments of 128 tokens, so cached tokens are
    always one of 1024, 1152, 1280, 1408, ... - the largest not beyond the shared prefix."""
    store = CacheStore()
    first, second = chat(text_of(1400), "first question"), chat(text_of(1400), "second one")
    run(store, first)
    cached = run(store, second, now=1).cached_tokens
    prefix = shared_prefix(first, second)
    assert cached == 1024 + ((prefix - 1024) // 128) * 128
    assert cached in {1024, 1152, 1280, 1408}


def test_prompt_cache_key_routes_requests(text_of: Callable[..., str]) -> None:
    """ "How it works" (cache routing): ``prompt_cache_key`` is combined with the prefix
    hash, so requests under another key land elsewhere and miss."""
    store, system = CacheStore(), text_of(2000)
    run(store, chat(system, "a", prompt_cache_key="agent-1"))
    assert run(store, chat(system, "b", prompt_cache_key="agent-2"), now=1).cached_tokens == 0
    assert run(store, chat(system, "c", prompt_cache_key="agent-1"), now=2).cached_tokens > 0


def test_in_memory_retention_expires_after_inactivity(text_of: Callable[..., str]) -> None:
    """ "Prompt cache retention": in-memory caches are cleared after 5-10 minutes of
    inactivity (the simulator keeps the lower bound); hits refresh the clock."""
    store, body = CacheStore(), chat(text_of(2000), "q")
    run(store, body, now=0)
    assert run(store, body, now=290).cached_tokens > 0
    assert run(store, body, now=580).cached_tokens > 0
    assert run(store, body, now=900).cached_tokens == 0


def test_extended_retention_keeps_prefixes_for_24_hours(text_of: Callable[..., str]) -> None:
    """ "Extended prompt cache retention": ``prompt_cache_retention: "24h"``."""
    store = CacheStore()
    body = chat(text_of(2000), "q", prompt_cache_retention="24h")
    run(store, body, now=0)
    assert run(store, body, now=3 * 3600).cached_tokens > 0
    assert run(store, body, now=3 * 3600 + 86_401).cached_tokens == 0


def test_write_billing_models_report_cache_write_tokens(text_of: Callable[..., str]) -> None:
    """Guide intro: from the GPT-5.6 family on, writes are billed and reported in
    ``cache_write_tokens``; earlier models report none."""
    store = CacheStore()
    old = run(store, chat(text_of(2000), "q"))
    assert old.cache_write_tokens == 0
    body = {**chat(text_of(2000), "q"), "model": "gpt-5.6"}
    first = run(store, body)
    assert first.cache_write_tokens > 1024 and first.cached_tokens == 0


def test_responses_input_shares_prefixes_across_turns(text_of: Callable[..., str]) -> None:
    """Structuring prompts: static instructions first, so a growing ``input`` keeps hitting."""
    store = CacheStore()
    base: dict[str, Any] = {"model": "gpt-4o", "instructions": text_of(2000), "input": "one"}
    grown = {
        **base,
        "input": [
            {"role": "user", "content": "one"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "two"},
        ],
    }
    for n, body in enumerate((base, grown)):
        result = run(store, body, now=n, tokens_of=responses_prompt_tokens)
    assert result.cached_tokens >= 1024
