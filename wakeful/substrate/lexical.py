"""Lexical analysis and BM25 sparse vectors, computed client-side.

Both vector backends store the *same* sparse vectors, produced here, and let the engine apply
IDF (Qdrant's ``Modifier.Idf``) over the tenant's and agent's own points. Encoding on the
client keeps the embedded and server backends byte-for-byte equivalent, keeps the analyzer
in one place, and needs no inference service. The encoder's ``name`` is recorded in the
collection spec so that vectors of two analyzers are never mixed in one collection.

The analyzer is general English, tuned to no benchmark: Unicode words (NFKC, case-folded,
numbers kept), the Snowball English stop list (:mod:`wakeful.substrate.stopwords_en`) and
the Snowball English ("Porter2") stemmer of ``snowballstemmer``. Documents and queries go
through the same :func:`analyze`, so a word stems alike on both sides.

Document weights are BM25's term-frequency part, ``tf·(k1+1) / (tf + k1·(1-b+b·len/avg))``;
query weights are 1 per distinct term. With the engine's IDF this is exactly Okapi BM25.
"""

from __future__ import annotations

import hashlib
import re
import threading
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

import snowballstemmer

from wakeful.substrate.stopwords_en import SNOWBALL_ENGLISH

__all__ = [
    "ANALYZER",
    "STOPWORDS",
    "Bm25Encoder",
    "SparseVector",
    "analyze",
    "stem",
    "term_index",
    "tokenize",
]

# The analyzer's version, part of every name that stored vectors are kept under (the BM25
# encoder's and the hashing embedder's): bump it whenever :func:`analyze` would give any
# text other terms, so that existing vectors are re-indexed instead of mixed with new ones.
ANALYZER = "en-snowball-v2"

STOPWORDS: frozenset[str] = SNOWBALL_ENGLISH

# Letters and digits of any script; an apostrophe between two of them stays in the word,
# so contractions ("isn't") reach the stop list whole and "rock'n'roll" is one word.
_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_POSSESSIVE = re.compile(r"'s\b")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})


def tokenize(text: str) -> list[str]:
    """Words of ``text``: NFKC-normalised, case-folded runs of letters and digits (numbers
    kept: dates and amounts are often what a question is about); a possessive ``'s`` is
    dropped so "Mel's" matches "Mel"."""
    text = unicodedata.normalize("NFKC", text).casefold().translate(_APOSTROPHES)
    return _TOKEN.findall(_POSSESSIVE.sub("", text))


_STEMMERS = threading.local()


@lru_cache(maxsize=262_144)
def stem(word: str) -> str:
    """The Snowball English stem of ``word``: "painting", "painted", "paints" -> "paint"."""
    # A Snowball stemmer keeps its working state on the instance: one per thread, since
    # activity threads analyze concurrently.
    stemmer = getattr(_STEMMERS, "english", None)
    if stemmer is None:
        stemmer = _STEMMERS.english = snowballstemmer.stemmer("english")
    result: str = stemmer.stemWord(word)
    return result


def analyze(text: str) -> list[str]:
    """Words minus stopwords, stemmed: the terms BM25 and the hashing embedder see."""
    return [stem(t) for t in tokenize(text) if t not in STOPWORDS]


@lru_cache(maxsize=262_144)
def term_index(term: str) -> int:
    """Stable 32-bit sparse index of a term (blake2b; never ``hash()``, which is salted)."""
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=4).digest(), "little")


@dataclass(frozen=True, slots=True)
class SparseVector:
    """Sorted, duplicate-free ``indices`` with their ``values``."""

    indices: tuple[int, ...]
    values: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.indices) != len(self.values):
            raise ValueError("sparse vector indices and values differ in length")

    @property
    def is_empty(self) -> bool:
        return not self.indices


@dataclass(frozen=True, slots=True)
class Bm25Encoder:
    """BM25 sparse encoder. ``avg_len`` is fixed (not fitted) so encoding is stateless.

    The default ``avg_len`` suits conversational turns (≈ 18 content terms each); longer
    documents are then length-penalised more, which is what BM25's ``b`` is for.
    """

    k1: float = 1.2
    b: float = 0.75
    avg_len: float = 20.0

    @property
    def name(self) -> str:
        return f"bm25-{ANALYZER}:k1={self.k1:g}:b={self.b:g}:avg={self.avg_len:g}"

    def encode_document(self, text: str) -> SparseVector:
        terms = analyze(text)
        norm = self.k1 * (1.0 - self.b + self.b * len(terms) / self.avg_len)
        weights = {
            term_index(t): tf * (self.k1 + 1.0) / (tf + norm) for t, tf in Counter(terms).items()
        }
        return _sparse(weights)

    def encode_query(self, text: str) -> SparseVector:
        return _sparse({term_index(t): 1.0 for t in analyze(text)})


def _sparse(weights: dict[int, float]) -> SparseVector:
    items = sorted(weights.items())
    return SparseVector(tuple(i for i, _ in items), tuple(v for _, v in items))
