"""OpenAI automatic prompt caching, as the prompt-caching guide documents it.

Rules implemented (source: developers.openai.com "Prompt caching", read 2026-11):

* Caching is automatic for prompts of 1024 tokens or more; hits are exact prefix matches
  and come in 128-token increments (1024, 1152, 1280, ...). Shorter prompts report
  ``cached_tokens: 0``.
* Routing: a request goes to a cache "machine" chosen by a hash of its first 256 tokens
  combined with ``prompt_cache_key``; entries are only found on the machine that wrote
  them, so a different key (or none) does not see another key's prefixes. The ~15 rpm
  overflow to extra machines is not simulated (it would make hits nondeterministic).
* Retention: ``in_memory`` (default) keeps a prefix for a few minutes of inactivity - the
  simulator uses the documented lower bound, 5 minutes, so it never overstates hits;
  ``prompt_cache_retention: "24h"`` keeps it up to 24 hours. Hits refresh retention.
* Caches are per organisation (the simulator's scope) and per model.
* Models of the GPT-5.6 family and later bill cache writes and report them in
  ``cache_write_tokens``; earlier models report 0.

The prompt the tokens come from is a canonical serialisation (see
:func:`chat_prompt_text` / :func:`responses_prompt_text`): tools first, then each message
as ``<|role|>`` followed by its content.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from wakeful.compiler.canonical import canonical_json
from wakeful.testing.simulator.state import CacheStore
from wakeful.testing.simulator.tokens import block_text, digest, encode

__all__ = [
    "CACHE_INCREMENT",
    "MIN_CACHED_PREFIX",
    "RETENTION_SECONDS",
    "OpenAICacheResult",
    "apply_cache",
    "chat_prompt_tokens",
    "responses_prompt_tokens",
    "writes_billed",
]

MIN_CACHED_PREFIX = 1024
CACHE_INCREMENT = 128
ROUTING_PREFIX_TOKENS = 256
RETENTION_SECONDS: dict[str, float] = {"in_memory": 300.0, "24h": 86_400.0}
WRITE_BILLED_PREFIXES = ("gpt-5.6", "gpt-5.7", "gpt-5.8", "gpt-5.9", "gpt-6")


def writes_billed(model: str) -> bool:
    return model.startswith(WRITE_BILLED_PREFIXES)


@dataclass(frozen=True)
class OpenAICacheResult:
    prompt_tokens: int
    cached_tokens: int
    cache_write_tokens: int


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", ""))
            if isinstance(part, dict) and "text" in part
            else block_text(part)
            for part in content
        )
    return canonical_json(content)


def _segments_tokens(segments: list[str]) -> list[int]:
    tokens: list[int] = []
    for segment in segments:
        tokens.extend(encode(segment))
    return tokens


def chat_prompt_tokens(body: dict[str, Any]) -> list[int]:
    """Token ids of a Chat Completions request in canonical order."""
    segments: list[str] = []
    if body.get("tools"):
        segments.append("<|tools|>" + canonical_json(body["tools"]))
    for message in body.get("messages") or []:
        segments.append(f"<|{message.get('role', '')}|>")
        segments.append(_content_text(message.get("content")))
        if message.get("tool_calls"):
            segments.append(canonical_json(message["tool_calls"]))
        if message.get("tool_call_id"):
            segments.append(f"<|call:{message['tool_call_id']}|>")
    return _segments_tokens(segments)


def responses_prompt_tokens(body: dict[str, Any]) -> list[int]:
    """Token ids of a Responses request: tools, instructions, then input items."""
    segments: list[str] = []
    if body.get("tools"):
        segments.append("<|tools|>" + canonical_json(body["tools"]))
    if body.get("instructions"):
        segments.append("<|developer|>" + str(body["instructions"]))
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    for item in items or []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "message" or "role" in item:
            segments.append(f"<|{item.get('role', 'user')}|>")
            segments.append(_content_text(item.get("content")))
        else:
            segments.append(f"<|{kind}|>" + canonical_json(item))
    return _segments_tokens(segments)


def apply_cache(
    store: CacheStore,
    *,
    model: str,
    tokens: Sequence[int],
    prompt_cache_key: str | None,
    retention: str | None,
    now: float,
) -> OpenAICacheResult:
    """Find the longest cached 128-token-aligned prefix, then cache this prompt's prefixes."""
    n = len(tokens)
    if n < MIN_CACHED_PREFIX:
        return OpenAICacheResult(n, 0, 0)
    ttl = RETENTION_SECONDS.get(retention or "in_memory", RETENTION_SECONDS["in_memory"])
    routing = digest(
        "route",
        model,
        prompt_cache_key or "",
        array("I", tokens[:ROUTING_PREFIX_TOKENS]).tobytes(),
    )
    boundaries = list(range(MIN_CACHED_PREFIX, n + 1, CACHE_INCREMENT))
    hasher = hashlib.blake2b(routing, digest_size=16)
    keys: list[bytes] = []
    start = 0
    for boundary in boundaries:
        hasher.update(array("I", tokens[start:boundary]).tobytes())
        start = boundary
        keys.append(hasher.copy().digest())

    cached = 0
    for boundary, key in zip(reversed(boundaries), reversed(keys), strict=True):
        entry = store.get(key, now)
        if entry is not None:
            entry.touch(now)
            cached = boundary
            break
    for boundary, key in zip(boundaries, keys, strict=True):
        store.put(key, boundary, ttl, now)
    written = boundaries[-1] - cached if writes_billed(model) else 0
    return OpenAICacheResult(n, cached, written)
