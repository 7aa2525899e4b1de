"""Build a provider by name: the one place that knows which class serves which name.

The names are the compiler's (``wakeful.compiler.render.RENDERERS``), so every agent the
compiler can render a window for has a provider here: ``anthropic`` (Messages API),
``openai_chat`` (Chat Completions) and ``openai_responses`` (Responses). The compiler's
aliases (``openai``, ``openai-chat``, ``openai-responses``: ``PROVIDER_ALIASES``) are
accepted here and there alike. The simulator needs no name of its own: point any of
these at its ``base_url``.

Each provider's module (and so its SDK) is imported when a provider of that name is first
built: the SDKs' type modules take a good share of a worker's start-up, and a worker whose
agents all use one provider never needs the other SDK.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import cast

from wakeful.compiler.render import PROVIDER_ALIASES, RENDERERS
from wakeful.errors import ConfigError
from wakeful.providers.base import ModelProvider

__all__ = ["PROVIDER_NAMES", "build_provider", "canonical_provider"]

# name -> (module, class) of the provider serving it
_FACTORIES: dict[str, tuple[str, str]] = {
    "anthropic": ("wakeful.providers.anthropic", "AnthropicProvider"),
    "openai_chat": ("wakeful.providers.openai", "OpenAIChatProvider"),
    "openai_responses": ("wakeful.providers.openai", "OpenAIResponsesProvider"),
}
PROVIDER_NAMES: tuple[str, ...] = (*RENDERERS, *PROVIDER_ALIASES)
"""Every provider name an agent may declare: the compiler's names and their aliases."""


def canonical_provider(name: str) -> str:
    """The compiler's name for ``name``; raises :class:`ConfigError` naming the choices."""
    canonical = PROVIDER_ALIASES.get(name, name)
    if canonical not in _FACTORIES:
        raise ConfigError(
            f"unknown model provider {name!r}; choose one of {', '.join(PROVIDER_NAMES)}"
        )
    return canonical


def build_provider(
    provider_name: str,
    *,
    api_key: str,
    base_url: str | None = None,
    timeout: float = 120.0,
) -> ModelProvider:
    """A ready provider; raises :class:`ConfigError` naming the valid choices."""
    module, name = _FACTORIES[canonical_provider(provider_name)]
    factory = cast(Callable[..., ModelProvider], getattr(importlib.import_module(module), name))
    return factory(api_key, base_url=base_url, timeout=timeout)
