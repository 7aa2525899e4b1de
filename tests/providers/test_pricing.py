"""Cost arithmetic against the published price table and its multipliers."""

from __future__ import annotations

import math

import pytest

from wakeful.errors import ConfigError
from wakeful.providers.base import Usage
from wakeful.providers.pricing import PRICE_TABLE_VERSION, PRICES, cost_usd, price_for


def test_price_table_is_dated() -> None:
    year, month, day = (int(p) for p in PRICE_TABLE_VERSION.split("-"))
    assert year >= 2026 and 1 <= month <= 12 and 1 <= day <= 31


@pytest.mark.parametrize("model", ["claude-sonnet-4-6", "claude-opus-4-8", "claude-haiku-4-5"])
def test_anthropic_cache_multipliers(model: str) -> None:
    """Pricing page: 5m writes 1.25x, 1h writes 2x, hits 0.1x of base input."""
    price = price_for("anthropic", model)
    assert price is not None
    assert math.isclose(price.cache_write_5m, price.input * 1.25)
    assert math.isclose(price.cache_write_1h, price.input * 2)
    assert math.isclose(price.cache_read, price.input * 0.1)


def test_cost_of_a_cached_anthropic_call() -> None:
    usage = Usage(
        input_tokens=1_000,
        output_tokens=500,
        cache_read_input_tokens=100_000,
        cache_creation_input_tokens=30_000,
        cache_creation_5m_input_tokens=20_000,
        cache_creation_1h_input_tokens=10_000,
    )
    # Sonnet 4.6: $3 in, $15 out, $0.30 read, $3.75 5m write, $6 1h write per MTok.
    expected = (1_000 * 3 + 500 * 15 + 100_000 * 0.3 + 20_000 * 3.75 + 10_000 * 6) / 1e6
    assert math.isclose(cost_usd("anthropic", "claude-sonnet-4-6-20260101", usage), expected)


def test_cost_of_an_openai_call_uses_the_cached_input_price() -> None:
    usage = Usage(input_tokens=500, output_tokens=100, cache_read_input_tokens=1_536)
    expected = (500 * 2.5 + 100 * 10 + 1_536 * 1.25) / 1e6
    assert math.isclose(cost_usd("openai", "gpt-4o-2024-08-06", usage), expected)


def test_longest_prefix_wins() -> None:
    assert price_for("openai", "gpt-4o-mini") == PRICES["openai"]["gpt-4o-mini"]
    assert (
        price_for("anthropic", "claude-opus-4-1-20250805") == PRICES["anthropic"]["claude-opus-4-1"]
    )
    assert price_for("anthropic", "claude-opus-4-5") == PRICES["anthropic"]["claude-opus-4-5"]


def test_unknown_model_names_the_fix() -> None:
    with pytest.raises(ConfigError, match=r"add it to wakeful\.providers\.pricing\.PRICES"):
        cost_usd("anthropic", "claude-unknown-9", Usage())
