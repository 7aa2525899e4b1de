"""Anthropic prompt caching, as the Messages API documents it.

Rules implemented (source: platform.claude.com "Prompt caching", read 2026-11):

* The cached prefix is everything in ``tools`` -> ``system`` -> ``messages`` order up to
  and including a block carrying ``cache_control`` (a *breakpoint*); matches are exact.
* At most 4 breakpoints per request; a 5th is a 400 "A maximum of 4 blocks with
  cache_control may be provided. Found 5."
* A top-level ``cache_control`` (automatic caching) puts a breakpoint on the last cacheable
  block; it takes one of the 4 slots unless that block already carries one.
* Lookback: for each breakpoint the system checks that block boundary and the ones before
  it, 20 boundaries in all, for an entry an *earlier request wrote*; the longest hit wins.
  Entries are only ever written at breakpoints, so a conversation that grew by more than
  20 blocks since the last write misses unless another breakpoint sits nearer.
* Minimum cacheable prefix per model (:data:`MIN_CACHEABLE`); shorter prefixes are
  processed without caching and without error.
* TTL 5 minutes (default) or 1 hour (``ttl: "1h"``), refreshed free on every hit; a 1h
  breakpoint may not follow a 5m one (400 naming the block).
* Billing with mixed TTLs: A = tokens at the highest hit, B = tokens at the highest 1h
  breakpoint after A (else A), C = tokens at the last breakpoint; reads A, 1h writes B-A,
  5m writes C-B, uncached input is everything after C.
* ``tool_choice`` and ``thinking`` settings are part of the message-level prefix: changing
  them keeps the tools+system cache and invalidates message caches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wakeful.compiler.canonical import canonical_json
from wakeful.providers.cache_limits import (
    ANTHROPIC_LOOKBACK_BLOCKS,
    MIN_CACHEABLE,
    min_cacheable_tokens,
)
from wakeful.testing.simulator.state import CacheStore, SimError
from wakeful.testing.simulator.tokens import (
    block_identity,
    block_text,
    count_tokens,
    digest,
)

__all__ = [
    "LOOKBACK_BLOCKS",
    "MAX_BREAKPOINTS",
    "MIN_CACHEABLE",
    "TTL_SECONDS",
    "AnthropicCacheResult",
    "Block",
    "Breakpoint",
    "apply_cache",
    "min_cacheable_tokens",
    "parse_request",
]

MAX_BREAKPOINTS = 4
LOOKBACK_BLOCKS = ANTHROPIC_LOOKBACK_BLOCKS  # the runtime's classifier reads the same one
TTL_SECONDS: dict[str, float] = {"5m": 300.0, "1h": 3600.0}


_TTL_ORDER_MESSAGE = (
    "{path}.cache_control.ttl: a ttl='1h' cache_control block must not come after a "
    "ttl='5m' cache_control block. Note that blocks are processed in the following order: "
    "`tools`, `system`, `messages`."
)
_UNCACHEABLE_TYPES = frozenset({"thinking", "redacted_thinking"})


@dataclass(frozen=True)
class Block:
    path: str
    identity: bytes
    tokens: int
    cacheable: bool


@dataclass(frozen=True)
class Breakpoint:
    index: int
    ttl: str
    path: str
    automatic: bool = False


@dataclass(frozen=True)
class AnthropicCacheResult:
    input_tokens: int
    cache_read_input_tokens: int
    cache_creation_5m: int
    cache_creation_1h: int
    hit_index: int | None
    written: tuple[int, ...]

    @property
    def cache_creation_input_tokens(self) -> int:
        return self.cache_creation_5m + self.cache_creation_1h


def _ttl_of(control: Any, path: str) -> str:
    if not isinstance(control, dict) or control.get("type") != "ephemeral":
        raise SimError(400, f"{path}.cache_control.type: Input should be 'ephemeral'")
    ttl = control.get("ttl", "5m")
    if ttl not in TTL_SECONDS:
        raise SimError(400, f"{path}.cache_control.ttl: Input should be '5m' or '1h'")
    return str(ttl)


def _content_blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return content
    raise SimError(400, "messages: content must be a string or a list of content blocks")


def parse_request(body: dict[str, Any]) -> tuple[list[Block], list[Breakpoint]]:
    """Flatten a Messages request into ordered blocks and its breakpoints (validated)."""
    blocks: list[Block] = []
    breakpoints: list[Breakpoint] = []

    def add(path: str, block: Any, salt: str, section: str, cacheable: bool = True) -> None:
        ident = digest(section, salt, block_identity(block))
        blocks.append(Block(path, ident, count_tokens(block_text(block)), cacheable))
        if isinstance(block, dict) and "cache_control" in block:
            ttl = _ttl_of(block["cache_control"], path)
            breakpoints.append(Breakpoint(len(blocks) - 1, ttl, path))

    for i, tool in enumerate(body.get("tools") or []):
        add(f"tools.{i}", tool, "", "tools")
    system = body.get("system")
    if isinstance(system, str) and system:
        add("system", {"type": "text", "text": system}, "", "system")
    elif isinstance(system, list):
        for i, block in enumerate(system):
            add(f"system.{i}", block, "", "system")
    settings = canonical_json([body.get("tool_choice"), body.get("thinking")])
    for m, message in enumerate(body.get("messages") or []):
        role = str(message.get("role", ""))
        for c, block in enumerate(_content_blocks(message.get("content"))):
            kind = block.get("type") if isinstance(block, dict) else None
            salt = f"{settings}|{role}|{'first' if c == 0 else 'cont'}"
            add(
                f"messages.{m}.content.{c}", block, salt, "messages", kind not in _UNCACHEABLE_TYPES
            )

    auto = body.get("cache_control")
    if auto is not None:
        ttl = _ttl_of(auto, "cache_control")
        last = next((i for i in range(len(blocks) - 1, -1, -1) if blocks[i].cacheable), None)
        if last is not None and not any(bp.index == last for bp in breakpoints):
            breakpoints.append(Breakpoint(last, ttl, blocks[last].path, automatic=True))
            breakpoints.sort(key=lambda bp: bp.index)

    if len(breakpoints) > MAX_BREAKPOINTS:
        raise SimError(
            400,
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {len(breakpoints)}.",
        )
    seen_short = False
    for bp in breakpoints:
        if bp.ttl == "5m":
            seen_short = True
        elif seen_short:
            raise SimError(400, _TTL_ORDER_MESSAGE.format(path=bp.path))
    return blocks, breakpoints


def apply_cache(
    store: CacheStore,
    *,
    model: str,
    blocks: list[Block],
    breakpoints: list[Breakpoint],
    now: float,
) -> AnthropicCacheResult:
    """Look up, bill and write cache entries for one request (mutates ``store``)."""
    chain: list[bytes] = []
    cumulative: list[int] = []
    running, acc = digest("model", model), 0
    for block in blocks:
        running = digest(running, block.identity)
        acc += block.tokens
        chain.append(running)
        cumulative.append(acc)
    total = acc

    hit_index: int | None = None
    for bp in breakpoints:
        for j in range(bp.index, max(-1, bp.index - LOOKBACK_BLOCKS), -1):
            entry = store.get(chain[j], now)
            if entry is not None:
                entry.touch(now)
                if hit_index is None or j > hit_index:
                    hit_index = j
                break

    def upto(index: int | None) -> int:
        return 0 if index is None else cumulative[index]

    a = upto(hit_index)
    minimum = min_cacheable_tokens(model)
    qualifying = [bp for bp in breakpoints if cumulative[bp.index] >= minimum]
    after = [bp for bp in qualifying if hit_index is None or bp.index > hit_index]
    b = max((upto(bp.index) for bp in after if bp.ttl == "1h"), default=a)
    c = max((upto(bp.index) for bp in after), default=a)
    for bp in qualifying:
        store.put(chain[bp.index], cumulative[bp.index], TTL_SECONDS[bp.ttl], now)
    return AnthropicCacheResult(
        input_tokens=total - c,
        cache_read_input_tokens=a,
        cache_creation_5m=c - b,
        cache_creation_1h=b - a,
        hit_index=hit_index,
        written=tuple(bp.index for bp in after),
    )
