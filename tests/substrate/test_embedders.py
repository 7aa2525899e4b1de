"""Embedders: the hashing default, OpenAI at the transport, the optional local model."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys

import httpx
import pytest

from wakeful.errors import ConfigError, ProviderError
from wakeful.substrate.embedders import (
    Embedder,
    HashingEmbedder,
    OpenAIEmbedder,
    SentenceTransformerEmbedder,
)


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_hashing_vectors_are_unit_length_and_sized() -> None:
    e = HashingEmbedder(dim=256)
    assert isinstance(e, Embedder)
    for vec in e.embed(["Hello there, Caroline!", "", "the and of"]):
        assert len(vec) == 256
        assert math.hypot(*vec) == pytest.approx(1.0)


def test_hashing_puts_related_texts_closer() -> None:
    e = HashingEmbedder()
    query, near, far = e.embed(
        ["When did Melanie paint a sunrise?", "I painted that lake sunrise last year", "My dog ran"]
    )
    assert cosine(query, near) > cosine(query, far) + 0.1


def test_character_ngrams_catch_what_stemming_misses() -> None:
    e = HashingEmbedder()
    camp, campfire, tax = e.embed(["camping", "campfire stories", "tax return"])
    assert cosine(camp, campfire) > cosine(camp, tax)


def test_hashing_is_identical_in_another_process() -> None:
    """Python's own hash() is salted per process; the embedder must not depend on it."""
    text = "Deterministic across processes, machines and releases."
    here = HashingEmbedder(dim=64).embed([text])[0]
    code = (
        "import json; from wakeful.substrate.embedders import HashingEmbedder; "
        f"print(json.dumps(HashingEmbedder(dim=64).embed([{text!r}])[0]))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == here


def test_the_name_changes_with_anything_that_changes_the_vectors() -> None:
    names = {
        HashingEmbedder().name,
        HashingEmbedder(dim=512).name,
        HashingEmbedder(char_ngrams=(2, 4)).name,
        HashingEmbedder(bigram_weight=0.0).name,
    }
    assert len(names) == 4


def test_hashing_rejects_a_bad_dimension() -> None:
    with pytest.raises(ConfigError, match="dim"):
        HashingEmbedder(dim=0)


def _openai(handler: httpx.MockTransport, **kw: object) -> OpenAIEmbedder:
    return OpenAIEmbedder(
        api_key="sk-test",
        base_url="http://embeddings.invalid/v1",
        http_client=httpx.Client(transport=handler),
        **kw,  # type: ignore[arg-type]
    )


def test_openai_is_built_with_retries_off() -> None:
    e = OpenAIEmbedder(api_key="sk-test", base_url="http://embeddings.invalid/v1")
    assert e.max_retries == 0
    assert (e.name, e.dim) == ("openai:text-embedding-3-small:d1536", 1536)
    e.close()


def test_openai_embeds_in_input_order() -> None:
    seen: list[dict[str, object]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        data = [
            {"object": "embedding", "index": i, "embedding": [float(i), 1.0]}
            for i in reversed(range(len(body["input"])))
        ]
        usage = {"prompt_tokens": 2, "total_tokens": 2}
        return httpx.Response(
            200, json={"object": "list", "data": data, "model": "m", "usage": usage}
        )

    e = _openai(httpx.MockTransport(handle), dim=2)
    assert e.embed(["a", "b"]) == [[0.0, 1.0], [1.0, 1.0]]
    assert seen[0]["dimensions"] == 2
    assert e.name == "openai:text-embedding-3-small:d2"


def test_openai_rate_limit_is_a_retryable_provider_error() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(429, json={"error": {"message": "slow down"}})

    with pytest.raises(ProviderError) as info:
        _openai(httpx.MockTransport(handle)).embed(["a"])
    assert info.value.retryable and info.value.status == 429


def test_openai_unknown_model_needs_a_dimension() -> None:
    with pytest.raises(ConfigError, match="dim="):
        OpenAIEmbedder("some-compatible-model", api_key="sk-test")


@pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is not None,
    reason="sentence-transformers is installed",
)
def test_sentence_transformers_missing_says_how_to_install() -> None:
    with pytest.raises(ConfigError, match="pip install sentence-transformers"):
        SentenceTransformerEmbedder()
