"""The worker's providers: one SDK client per provider name for the worker's life, closed
when it stops; a provider without a key is refused by name."""

from __future__ import annotations

import pytest

from wakeful.errors import ConfigError
from wakeful.worker.serve import ProviderCache
from wakeful.worker.settings import Settings


async def test_one_client_per_provider_closed_when_the_worker_stops() -> None:
    cache = ProviderCache(Settings(anthropic_api_key="k", openai_api_key="k"))
    anthropic, openai = cache("anthropic"), cache("openai")
    assert cache("anthropic") is anthropic and cache("openai") is openai
    assert not anthropic._client.is_closed() and not openai._client.is_closed()  # type: ignore[attr-defined]
    await cache.aclose()
    assert anthropic._client.is_closed() and openai._client.is_closed()  # type: ignore[attr-defined]
    fresh = cache("anthropic")  # asked again after closing: a new, open client
    assert fresh is not anthropic and not fresh._client.is_closed()  # type: ignore[attr-defined]
    await cache.aclose()


def test_a_provider_without_a_key_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "WAKEFUL_OPENAI_API_KEY"):  # not the shell's key
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigError, match="set OPENAI_API_KEY"):
        ProviderCache(Settings(anthropic_api_key="k"))("openai")
