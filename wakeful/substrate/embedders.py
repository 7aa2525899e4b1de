"""Embedders: text to dense vectors, behind one small protocol.

An embedder's ``name`` is recorded in the collection it fills (see
:class:`~wakeful.substrate.vectors.base.CollectionSpec`); it must change whenever the vectors
would, so two embedders' vectors are never compared with each other.

* :class:`HashingEmbedder` - the dependency-free default: signed feature hashing, identical
  in every process and on every machine, no model download.
* :class:`OpenAIEmbedder` - OpenAI's embeddings endpoint; SDK retries off, Temporal retries.
* :class:`SentenceTransformerEmbedder` - a local model, if ``sentence-transformers`` is
  installed.
* :class:`WordLlamaEmbedder` - WordLlama's static token embeddings (256 dimensions, shipped
  inside the ``wordllama`` wheel: offline, no torch), with the ``semantic`` extra.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from functools import lru_cache
from itertools import pairwise
from typing import Any, ClassVar, Protocol, runtime_checkable

from wakeful.errors import ConfigError
from wakeful.substrate.lexical import ANALYZER, STOPWORDS, stem, tokenize

__all__ = [
    "Embedder",
    "HashingEmbedder",
    "OpenAIEmbedder",
    "SentenceTransformerEmbedder",
    "WordLlamaEmbedder",
    "is_lexical",
]


@runtime_checkable
class Embedder(Protocol):
    """Texts to dense vectors of ``dim`` floats; ``name`` changes whenever the vectors would.

    An embedder may also declare ``lexical = True`` (a class attribute): its vectors encode
    the words of a text and nothing a BM25 index would not already match, so retrieval need
    not run a dense search beside BM25 (see :func:`is_lexical`).
    """

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


def is_lexical(embedder: Embedder) -> bool:
    """Whether ``embedder`` declares itself lexical (``lexical = True``); learned embedders
    do not, and get a dense ranking fused with BM25's."""
    return getattr(embedder, "lexical", False) is True


@lru_cache(maxsize=524_288)
def _slot(feature: str, dim: int) -> tuple[int, float]:
    """Bucket and sign of a feature, from blake2b (``hash()`` differs between processes)."""
    h = int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little")
    return (h >> 1) % dim, 1.0 if h & 1 else -1.0


class HashingEmbedder:
    """Signed feature hashing of stemmed words, word bigrams and character n-grams.

    Words carry the topic, bigrams a little word order, and character n-grams of the
    unstemmed words catch what stemming misses ("campfire" ~ "camping", typos, names).
    Term frequencies are damped (``1 + ln tf``) so one repeated word cannot dominate, and the
    result is L2-normalised so cosine and dot product agree. It is a lexical model: it finds
    shared words, not synonyms; fuse it with BM25, or use a learned embedder for semantics.
    It is declared ``lexical``: by default retrieval over its collection is BM25 alone.
    """

    lexical: ClassVar[bool] = True

    def __init__(
        self,
        dim: int = 1024,
        *,
        char_ngrams: tuple[int, int] = (3, 5),
        word_weight: float = 1.0,
        bigram_weight: float = 0.5,
        char_weight: float = 0.3,
    ) -> None:
        if dim <= 0:
            raise ConfigError(f"HashingEmbedder dim must be positive, got {dim}")
        self._dim = dim
        self._ngrams = char_ngrams
        self._weights = (word_weight, bigram_weight, char_weight)

    @property
    def name(self) -> str:
        lo, hi = self._ngrams
        w, b, c = self._weights
        return f"hashing-v1-{ANALYZER}:d{self._dim}:c{lo}-{hi}:w{w:g}/{b:g}/{c:g}"

    @property
    def dim(self) -> int:
        return self._dim

    def features(self, text: str) -> dict[str, float]:
        """Feature name -> summed weight, before hashing. Prefixes: w(ord), b(igram), c(har)."""
        word_w, bigram_w, char_w = self._weights
        content = [t for t in tokenize(text) if t not in STOPWORDS]
        stems = [stem(t) for t in content]
        keys: list[tuple[str, float]] = []
        if word_w > 0:
            keys += [("w:" + stem, word_w) for stem in stems]
        if bigram_w > 0:
            keys += [(f"b:{a} {b}", bigram_w) for a, b in pairwise(stems)]
        if char_w > 0:
            lo, hi = self._ngrams
            for token in content:
                padded = f"<{token}>"
                for n in range(lo, hi + 1):
                    keys += [("c:" + padded[i : i + n], char_w) for i in range(len(padded) - n + 1)]
        out: dict[str, float] = {}
        for key, weight in keys:
            out[key] = out.get(key, 0.0) + weight
        return out

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._embed_one(t) for t in texts]

    def _embed_one(self, text: str) -> list[float]:
        vec = [0.0] * self._dim
        units = {"w": self._weights[0], "b": self._weights[1], "c": self._weights[2]}
        for feature, value in self.features(text).items():
            index, sign = _slot(feature, self._dim)
            unit = units[feature[0]]
            # A feature seen k times counts unit * (1 + ln k): repeats add, but slowly.
            vec[index] += sign * unit * (1.0 + math.log(value / unit))
        norm = math.sqrt(sum(x * x for x in vec))
        if not norm:
            # No content word (or a perfect cancellation): a fixed direction, since a zero
            # vector has no cosine similarity and engines reject or mis-rank it.
            index, sign = _slot("empty", self._dim)
            vec[index], norm = sign, 1.0
        return [x / norm for x in vec]


_OPENAI_DIMS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


class OpenAIEmbedder:
    """OpenAI (or any OpenAI-compatible) embeddings, with SDK retries off.

    ``dim`` shortens ``text-embedding-3-*`` vectors server-side; it is part of the name, so
    a shortened and a full-size collection never mix. ``http_client`` is handed to the SDK
    as is (an ``httpx``/``httpx2`` client, e.g. one on a mock transport in tests). Failures
    surface as :class:`~wakeful.errors.ProviderError` with the retryability Temporal needs.
    """

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        api_key: str,
        dim: int | None = None,
        base_url: str | None = None,
        timeout: float = 30.0,
        http_client: Any = None,
    ) -> None:
        import openai

        native = _OPENAI_DIMS.get(model)
        if dim is None and native is None:
            raise ConfigError(f"unknown embedding size for OpenAI model {model!r}; pass dim=")
        self._model = model
        self._dim = dim if dim is not None else native or 0
        self._send_dim = dim is not None and dim != native
        self._client = openai.OpenAI(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=0,
            http_client=http_client,
        )

    @property
    def name(self) -> str:
        return f"openai:{self._model}:d{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def max_retries(self) -> int:
        return self._client.max_retries

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        from wakeful.providers.openai import map_openai_error

        extra: dict[str, Any] = {"dimensions": self._dim} if self._send_dim else {}
        arguments = {"model": self._model, "input": list(texts), "encoding_format": "float"}
        try:
            response = self._sent({**arguments, **extra})
        except Exception as exc:
            raise map_openai_error(exc) from exc
        return [list(d.embedding) for d in sorted(response.data, key=lambda d: d.index)]

    def _sent(self, arguments: dict[str, Any]) -> Any:
        """The request, sent a second time at once when the first got no reply because its
        connection failed (not timed out): with the SDK's retries off, a kept-alive
        connection the server closed while it sat in the pool fails the next request before
        any byte of a reply, which would otherwise cost an activity retry. A second
        failure, or any other, is the caller's (as for model calls, ``providers._sdk``)."""
        import openai

        try:
            return self._client.embeddings.create(**arguments)
        except openai.APIConnectionError as exc:
            if isinstance(exc, openai.APITimeoutError):
                raise
        return self._client.embeddings.create(**arguments)

    def close(self) -> None:
        self._client.close()


class SentenceTransformerEmbedder:
    """A local sentence-transformers model; vectors are L2-normalised.

    Optional: ``pip install sentence-transformers`` (it pulls in torch). The model name and
    its dimension make the embedder name.
    """

    def __init__(self, model: str = "sentence-transformers/all-MiniLM-L6-v2", **kwargs: Any):
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ConfigError(
                "SentenceTransformerEmbedder needs the optional sentence-transformers package: "
                "pip install sentence-transformers (or use HashingEmbedder / OpenAIEmbedder)"
            ) from exc
        self._model_name = model
        self._model = SentenceTransformer(model, **kwargs)
        dim = self._model.get_sentence_embedding_dimension()
        if not dim:
            raise ConfigError(f"model {model!r} does not report an embedding dimension")
        self._dim = int(dim)

    @property
    def name(self) -> str:
        return f"st:{self._model_name}:d{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = self._model.encode(list(texts), normalize_embeddings=True)
        return [[float(x) for x in row] for row in vectors]


WORDLLAMA_EXTRA = "semantic"


class WordLlamaEmbedder:
    """WordLlama (``l2_supercat``, 256 dimensions): token embeddings averaged per text,
    L2-normalised. The model ships inside the ``wordllama`` wheel and is loaded from there,
    never downloaded: its loader looks for the tokenizer in a folder the wheel does not
    have, then falls back to a cache directory, so the package folder is passed as that
    directory with downloads off. The package version is part of the name, since another
    version may ship other weights.
    """

    def __init__(self, config: str = "l2_supercat", dim: int = 256) -> None:
        try:
            import wordllama
            from wordllama import WordLlama
        except ImportError as exc:
            raise ConfigError(
                "WordLlamaEmbedder needs the optional wordllama package: "
                f"pip install 'wakeful[{WORDLLAMA_EXTRA}]' (or use HashingEmbedder)"
            ) from exc
        from importlib.metadata import version
        from pathlib import Path

        shipped = Path(wordllama.__file__).parent
        try:
            self._model = WordLlama.load(config, cache_dir=shipped, dim=dim, disable_download=True)
        except (AttributeError, ValueError, FileNotFoundError) as exc:
            raise ConfigError(
                f"wordllama model {config!r} (dim {dim}) is not in the installed package "
                f"({exc}); the wheel ships 'l2_supercat' at 256 dimensions"
            ) from None
        self._name = f"wordllama-{version('wordllama')}:{config}:d{dim}"
        self._dim = dim

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors = self._model.embed(list(texts), norm=False)
        out: list[list[float]] = []
        for row in vectors:
            vec = [float(x) for x in row]
            norm = math.sqrt(sum(x * x for x in vec))
            if not norm or not math.isfinite(norm):
                # No known token: a fixed direction, as HashingEmbedder gives (a zero vector
                # has no cosine similarity).
                vec, norm = [0.0] * self._dim, 1.0
                vec[0] = 1.0
            out.append([x / norm for x in vec])
        return out
