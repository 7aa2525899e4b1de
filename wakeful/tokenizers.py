"""Real BPE token counting (cl100k_base / o200k_base) via ``bpe-openai``.

This lives outside :mod:`wakeful.compiler` because it loads vocabulary files; the compiler
only sees the :class:`~wakeful.compiler.tokens.TokenCounter` protocol. Encodings are loaded
on construction, so build one counter per process and reuse it (with a
:class:`~wakeful.compiler.tokens.CountingCache`, each distinct text is tokenised once).
"""

from __future__ import annotations

import warnings
from typing import Any, Literal

from wakeful.compiler.tokens import EstimatingCounter, TokenCounter
from wakeful.errors import ConfigError

Encoding = Literal["o200k_base", "cl100k_base"]
_CHUNK = 50_000  # characters per encoder call


class BpeCounter:
    """Counts tokens exactly as OpenAI's tokenizer does; special tokens count as text."""

    __slots__ = ("_encoding", "_name")

    def __init__(self, encoding: Encoding = "o200k_base") -> None:
        self._name = encoding
        self._encoding = _load(encoding)

    @property
    def name(self) -> str:
        return f"bpe/{self._name}"

    def count(self, text: str) -> int:
        if len(text) <= _CHUNK:
            return len(self._encoding.encode_ordinary(text))
        # The encoder refuses very long inputs; count them in chunks cut at whitespace, which
        # is deterministic and off by at most a token per cut.
        total, start = 0, 0
        while start < len(text):
            end = min(start + _CHUNK, len(text))
            if end < len(text):
                cut = text.rfind(" ", start + _CHUNK // 2, end)
                end = cut if cut > start else end
            total += len(self._encoding.encode_ordinary(text[start:end]))
            start = end
        return total


def _load(encoding: str) -> Any:
    # bpe-openai reads its vocabularies through a deprecated importlib.resources call; the
    # warning is theirs and says nothing about this code, so it is silenced here only.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import bpe_openai

        return bpe_openai.get_encoding(encoding)


def counter_named(name: str) -> TokenCounter:
    """The counter a ledger names (``bpe/o200k_base``, ``bpe/cl100k_base`` or the estimator)."""
    if name.startswith("bpe/"):
        encoding = name.removeprefix("bpe/")
        if encoding in ("o200k_base", "cl100k_base"):
            return BpeCounter(encoding)  # type: ignore[arg-type]
    estimator = EstimatingCounter()
    if name == estimator.name:
        return estimator
    raise ConfigError(f"unknown token counter {name!r}")
