"""Provider prompt-cache limits the runtime needs to know (the cache-miss taxonomy).

Anthropic: the minimum cacheable prefix per model, from the docs' "Cache limitations"
table, and the lookback window: for each ``cache_control`` breakpoint the provider checks
that block boundary and the ones before it, 20 in all (the breakpoint's own counts), for an
entry an earlier request wrote, so an entry that ends 20 or more content blocks before every
breakpoint is not found although its prefix still matches. OpenAI caches prompts of 1024
tokens or more and matches any cached prefix: no lookback limit.
"""

from __future__ import annotations

__all__ = [
    "ANTHROPIC_LOOKBACK_BLOCKS",
    "DEFAULT_MIN_CACHEABLE",
    "MIN_CACHEABLE",
    "OPENAI_MIN_CACHED",
    "lookback_blocks",
    "min_cacheable_tokens",
]

# Longest matching model-id prefix wins. Values from the docs' "Cache limitations" table;
# unknown models (including simulator-only names) get the common 1024.
MIN_CACHEABLE: dict[str, int] = {
    "claude-opus-5": 512,
    "claude-fable-5": 512,
    "claude-mythos-5": 512,
    "claude-sonnet-5": 1024,
    "claude-opus-4-8": 1024,
    "claude-opus-4-7": 4096,
    "claude-opus-4-6": 4096,
    "claude-opus-4-5": 4096,
    "claude-haiku-4-5": 4096,
    "claude-sonnet-4": 1024,
    "claude-opus-4-1": 1024,
    "claude-opus-4": 1024,
    "claude-3-7-sonnet": 1024,
    "claude-3-5-sonnet": 1024,
    "claude-3-5-haiku": 2048,
    "claude-3-haiku": 2048,
    "claude-3-opus": 1024,
}
DEFAULT_MIN_CACHEABLE = 1024
OPENAI_MIN_CACHED = 1024
# Block boundaries checked per breakpoint, the breakpoint's own included: an entry ending
# ``d`` blocks before a breakpoint is found when ``d < ANTHROPIC_LOOKBACK_BLOCKS``.
ANTHROPIC_LOOKBACK_BLOCKS = 20


def min_cacheable_tokens(model: str, provider: str = "anthropic") -> int:
    """The shortest prefix ``model`` caches (longest matching model-id prefix wins)."""
    if provider.startswith("openai"):
        return OPENAI_MIN_CACHED
    best = ""
    for prefix in MIN_CACHEABLE:
        if model.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return MIN_CACHEABLE[best] if best else DEFAULT_MIN_CACHEABLE


def lookback_blocks(provider: str) -> int | None:
    """How many block boundaries back from each breakpoint ``provider`` looks for a cache
    entry, the breakpoint's own included (None: any cached prefix is found)."""
    return ANTHROPIC_LOOKBACK_BLOCKS if provider.startswith("anthropic") else None
