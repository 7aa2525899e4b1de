"""Versioned list prices, and the cost of one call's :class:`Usage`.

Sources (USD per million tokens, list prices, standard tier, no batch discount):

* Anthropic - platform.claude.com/docs/en/about-claude/pricing ("Model pricing" table:
  base input, 5m cache writes, 1h cache writes, cache hits and refreshes, output),
  read 2026-11. Cache writes are 1.25x (5m) and 2x (1h) of input and hits 0.1x for the
  models listed here; prices are stored per model rather than derived, because newer
  models (e.g. Opus 5.5) discount hits differently.
* OpenAI - developers.openai.com/api/docs/pricing (input, cached input, output), as
  summarised in public price tables of 2026-Q3/Q4. Cached input is 0.1x on the GPT-5
  family and 0.25x/0.5x on GPT-4.1/GPT-4o. Models from the GPT-5.6 family on bill cache
  writes at 1.25x input (prompt-caching guide); none of those is priced here yet.

Models are matched by the longest id prefix, so dated snapshots
(``claude-sonnet-4-5-20250929``) find their family. Bump :data:`PRICE_TABLE_VERSION`
whenever a number changes: stored costs name the table they were computed with.
"""

from __future__ import annotations

from dataclasses import dataclass

from wakeful.errors import ConfigError
from wakeful.providers.base import Usage

__all__ = ["PRICES", "PRICE_TABLE_VERSION", "Price", "cost_usd", "price_for"]

PRICE_TABLE_VERSION = "2026-11-22"


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write_5m: float
    cache_write_1h: float


def _anthropic(base: float, output: float) -> Price:
    return Price(base, output, round(base * 0.1, 6), round(base * 1.25, 6), base * 2.0)


def _openai(base: float, cached: float, output: float, write_multiplier: float = 1.0) -> Price:
    # OpenAI has one write price (no TTL tiers); both slots hold it.
    write = base * write_multiplier
    return Price(base, output, cached, write, write)


PRICES: dict[str, dict[str, Price]] = {
    "anthropic": {
        "claude-fable-5-1": Price(10.0, 50.0, 0.25, 12.50, 20.0),
        "claude-fable-5": _anthropic(10.0, 50.0),
        "claude-opus-5-5": Price(4.0, 20.0, 0.20, 5.0, 8.0),
        "claude-opus-5": _anthropic(5.0, 25.0),
        "claude-opus-4-8": _anthropic(5.0, 25.0),
        "claude-opus-4-7": _anthropic(5.0, 25.0),
        "claude-opus-4-6": _anthropic(5.0, 25.0),
        "claude-opus-4-5": _anthropic(5.0, 25.0),
        "claude-opus-4-1": _anthropic(15.0, 75.0),
        "claude-opus-4": _anthropic(15.0, 75.0),
        "claude-sonnet-5": _anthropic(2.0, 10.0),
        "claude-sonnet-4": _anthropic(3.0, 15.0),
        "claude-3-7-sonnet": _anthropic(3.0, 15.0),
        "claude-haiku-4-5": _anthropic(1.0, 5.0),
        "claude-3-5-haiku": _anthropic(0.80, 4.0),
        "claude-3-haiku": Price(0.25, 1.25, 0.03, 0.30, 0.50),
    },
    "openai": {
        "gpt-5.4-mini": _openai(0.75, 0.075, 4.50),
        "gpt-5.4": _openai(2.50, 0.25, 15.00),
        "gpt-5.2": _openai(1.75, 0.175, 14.00),
        "gpt-5-mini": _openai(0.25, 0.025, 2.00),
        "gpt-5": _openai(1.25, 0.125, 10.00),
        "gpt-4.1-mini": _openai(0.40, 0.10, 1.60),
        "gpt-4.1": _openai(2.00, 0.50, 8.00),
        "gpt-4o-mini": _openai(0.15, 0.075, 0.60),
        "gpt-4o": _openai(2.50, 1.25, 10.00),
    },
}


def price_for(provider: str, model: str) -> Price | None:
    """The price of the longest matching model-id prefix, or ``None``."""
    table = PRICES.get(provider, {})
    best = max((p for p in table if model.startswith(p)), key=len, default=None)
    return table[best] if best is not None else None


def cost_usd(provider: str, model: str, usage: Usage) -> float:
    """Cost of one call. Raises :class:`ConfigError` for a model with no price."""
    price = price_for(provider, model)
    if price is None:
        raise ConfigError(
            f"no price for {provider} model {model!r} in price table {PRICE_TABLE_VERSION}; "
            f"add it to wakeful.providers.pricing.PRICES"
        )
    five = usage.cache_creation_5m_input_tokens
    hour = usage.cache_creation_1h_input_tokens
    unsplit = max(usage.cache_creation_input_tokens - five - hour, 0)
    dollars = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_input_tokens * price.cache_read
        + (five + unsplit) * price.cache_write_5m
        + hour * price.cache_write_1h
    )
    return dollars / 1_000_000
