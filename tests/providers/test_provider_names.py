"""One set of provider names: every name the compiler renders a window for builds a provider."""

from __future__ import annotations

import pytest

from wakeful.compiler.pipeline import resolve_provider
from wakeful.compiler.render import RENDERERS
from wakeful.errors import ConfigError
from wakeful.providers.anthropic import AnthropicProvider
from wakeful.providers.openai import OpenAIChatProvider, OpenAIResponsesProvider
from wakeful.providers.registry import PROVIDER_NAMES, build_provider, canonical_provider

SERVED_BY = {
    "anthropic": AnthropicProvider,
    "openai_chat": OpenAIChatProvider,
    "openai_responses": OpenAIResponsesProvider,
}


def test_the_registry_serves_exactly_the_compilers_providers() -> None:
    assert set(SERVED_BY) == set(RENDERERS)


@pytest.mark.parametrize("name", PROVIDER_NAMES)
async def test_every_name_an_agent_may_declare_builds_its_provider(name: str) -> None:
    canonical = resolve_provider(name)  # what the compiler renders for it
    assert canonical_provider(name) == canonical
    provider = build_provider(name, api_key="k", base_url="http://127.0.0.1:9")
    assert type(provider) is SERVED_BY[canonical]
    await provider.aclose()  # type: ignore[attr-defined]


def test_a_name_neither_knows_is_refused_with_the_choices() -> None:
    with pytest.raises(ConfigError, match="anthropic, openai_chat, openai_responses, openai"):
        canonical_provider("gemini")
