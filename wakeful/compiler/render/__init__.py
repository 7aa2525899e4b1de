"""Provider renderers: a :class:`~wakeful.compiler.place.Layout` in, a request body out."""

from wakeful.compiler.render.anthropic import AnthropicRenderer
from wakeful.compiler.render.base import Mark, Rendered, Renderer
from wakeful.compiler.render.openai import OpenAIChatRenderer, OpenAIResponsesRenderer

RENDERERS: dict[str, type[Renderer]] = {
    "anthropic": AnthropicRenderer,
    "openai_chat": OpenAIChatRenderer,
    "openai_responses": OpenAIResponsesRenderer,
}
# The provider registry's names (``wakeful.providers.registry``) for the same renderers.
PROVIDER_ALIASES = {
    "openai": "openai_chat",
    "openai-chat": "openai_chat",
    "openai-responses": "openai_responses",
}

__all__ = [
    "PROVIDER_ALIASES",
    "RENDERERS",
    "AnthropicRenderer",
    "Mark",
    "OpenAIChatRenderer",
    "OpenAIResponsesRenderer",
    "Rendered",
    "Renderer",
]
