"""Provider registry and the public API of ``wakeful.providers``."""

from __future__ import annotations

import importlib

import pytest

from wakeful.errors import ConfigError
from wakeful.providers.anthropic import AnthropicProvider
from wakeful.providers.base import ModelProvider
from wakeful.providers.openai import OpenAIChatProvider, OpenAIResponsesProvider
from wakeful.providers.registry import PROVIDER_NAMES, build_provider

MODULES = [
    "wakeful.providers.anthropic",
    "wakeful.providers.openai",
    "wakeful.providers.pricing",
    "wakeful.providers.registry",
    "wakeful.testing.simulator",
    "wakeful.testing.simulator.anthropic_cache",
    "wakeful.testing.simulator.openai_cache",
    "wakeful.testing.simulator.script",
    "wakeful.testing.simulator.state",
    "wakeful.testing.simulator.tokens",
    "wakeful.telemetry",
]


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("anthropic", AnthropicProvider),
        ("openai", OpenAIChatProvider),
        ("openai-chat", OpenAIChatProvider),
        ("openai-responses", OpenAIResponsesProvider),
    ],
)
async def test_build_provider(name: str, cls: type) -> None:
    provider = build_provider(name, api_key="k", base_url="http://127.0.0.1:9")
    assert isinstance(provider, cls) and isinstance(provider, ModelProvider)
    await provider.aclose()  # type: ignore[attr-defined]


def test_unknown_provider_lists_the_choices() -> None:
    with pytest.raises(ConfigError, match=", ".join(PROVIDER_NAMES)):
        build_provider("gemini", api_key="k")


@pytest.mark.parametrize("module", MODULES)
def test_all_names_exist(module: str) -> None:
    mod = importlib.import_module(module)
    exported = mod.__all__
    assert sorted(set(exported)) == sorted(exported)
    for name in exported:
        assert hasattr(mod, name), f"{module}.__all__ lists missing {name}"
