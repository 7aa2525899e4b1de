"""Provider renderers: a :class:`~wakeful.compiler.place.Layout` in, a request body out."""

from wakeful.compiler.render.anthropic import AnthropicRenderer
from wakeful.compiler.render.base import Mark, Rendered, Renderer
from wakeful.compiler.render.openai import OpenAIChatRenderer, OpenAIResponsesRenderer

RENDERERS: dict[str, type[Renderer]] = {
    "anthropic": AnthropicRenderer,
    "openai_chat": OpenAIChatRenderer,
    "openai_responses": OpenAIResponsesRenderer,
}
PROVIDER_ALIASES = {"openai": "openai_chat"}

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
