"""Provider prompt-cache limits the runtime needs to know (the cache-miss taxonomy).

Anthropic: the minimum cacheable prefix per model, from the docs' "Cache limitations"
table; OpenAI caches prompts of 1024 tokens or more.
"""

from __future__ import annotations

__all__ = ["DEFAULT_MIN_CACHEABLE", "MIN_CACHEABLE", "OPENAI_MIN_CACHED", "min_cacheable_tokens"]

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


def min_cacheable_tokens(model: str, provider: str = "anthropic") -> int:
    """The shortest prefix ``model`` caches (longest matching model-id prefix wins)."""
    if provider.startswith("openai"):
        return OPENAI_MIN_CACHED
    best = ""
    for prefix in MIN_CACHEABLE:
        if model.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return MIN_CACHEABLE[best] if best else DEFAULT_MIN_CACHEABLE
