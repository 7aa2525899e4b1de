"""WAKEFUL_EMBEDDER picks the retrieval embedder the worker indexes and retrieves with."""

from __future__ import annotations

import pytest

from wakeful.errors import ConfigError
from wakeful.substrate.embedders import OpenAIEmbedder
from wakeful.worker.serve import embedder_for
from wakeful.worker.settings import load_settings


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith(("WAKEFUL_", "OPENAI_")):
            monkeypatch.delenv(name)


def test_hashing_is_the_default_and_keeps_the_index_default() -> None:
    assert load_settings().embedder == "hashing"
    assert embedder_for(load_settings()) is None


def test_openai_names_its_model_and_size_and_needs_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WAKEFUL_EMBEDDER", "openai:text-embedding-3-large")
    with pytest.raises(ConfigError, match="needs an OpenAI API key: set OPENAI_API_KEY"):
        embedder_for(load_settings())
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    chosen = embedder_for(load_settings())
    assert isinstance(chosen, OpenAIEmbedder)
    assert chosen.name == "openai:text-embedding-3-large:d3072"  # vectors kept per name
    monkeypatch.setenv("WAKEFUL_EMBEDDER", "openai")
    default = embedder_for(load_settings())
    assert default is not None and default.name == "openai:text-embedding-3-small:d1536"


def test_a_missing_package_or_an_unknown_kind_is_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WAKEFUL_EMBEDDER", "sentence-transformers")
    try:
        import sentence_transformers  # noqa: F401
    except ImportError:
        with pytest.raises(ConfigError, match=r"sentence-transformers: .*pip install"):
            embedder_for(load_settings())
    monkeypatch.setenv("WAKEFUL_EMBEDDER", "word2vec")
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert "WAKEFUL_EMBEDDER" in str(err.value) and "hashing, openai" in str(err.value)
    assert "\n" not in str(err.value)
