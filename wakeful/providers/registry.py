"""Build a provider by name: the one place that knows which class serves which name.

Names: ``anthropic`` (Messages API), ``openai`` / ``openai-chat`` (Chat Completions),
``openai-responses`` (Responses). The simulator needs no name of its own: point any of
these at its ``base_url``.
"""

from __future__ import annotations

from collections.abc import Callable

from wakeful.errors import ConfigError
from wakeful.providers.anthropic import AnthropicProvider
from wakeful.providers.base import ModelProvider
from wakeful.providers.openai import OpenAIChatProvider, OpenAIResponsesProvider

__all__ = ["PROVIDER_NAMES", "build_provider"]

_FACTORIES: dict[str, Callable[..., ModelProvider]] = {
    "anthropic": AnthropicProvider,
    "openai": OpenAIChatProvider,
    "openai-chat": OpenAIChatProvider,
    "openai-responses": OpenAIResponsesProvider,
}
PROVIDER_NAMES: tuple[str, ...] = tuple(_FACTORIES)


def build_provider(
    provider_name: str,
    *,
    api_key: str,
    base_url: str | None = None,
    timeout: float = 120.0,
) -> ModelProvider:
    """A ready provider; raises :class:`ConfigError` naming the valid choices."""
    factory = _FACTORIES.get(provider_name)
    if factory is None:
        raise ConfigError(
            f"unknown model provider {provider_name!r}; choose one of {', '.join(PROVIDER_NAMES)}"
        )
    return factory(api_key, base_url=base_url, timeout=timeout)
