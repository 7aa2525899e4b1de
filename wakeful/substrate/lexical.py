"""Lexical analysis and BM25 sparse vectors, computed client-side.

Both vector backends store the *same* sparse vectors, produced here, and let the engine apply
IDF (Qdrant's ``Modifier.Idf``) over the tenant's and agent's own points. Encoding on the
client keeps the embedded and server backends byte-for-byte equivalent, keeps the analyzer
tunable in one place, and needs no inference service. The encoder's ``name`` is recorded in
the collection spec so that vectors of two analyzers are never mixed in one collection.

Document weights are BM25's term-frequency part, ``tf·(k1+1) / (tf + k1·(1-b+b·len/avg))``;
query weights are 1 per distinct term. With the engine's IDF this is exactly Okapi BM25.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "QUERY_STOPWORDS",
    "STOPWORDS",
    "Bm25Encoder",
    "SparseVector",
    "analyze",
    "porter_stem",
    "term_index",
    "tokenize",
]

STOPWORDS: frozenset[str] = frozenset(
    """a about above after again against all am an and any are aren as at be because been
    before being below between both but by can cannot could couldn d did didn do does doesn
    doing don down during each few for from further had hadn has hasn have haven having he
    her here hers herself him himself his how i if in into is isn it its itself just let ll
    m me more most mustn my myself no nor not now o of off on once only or other ought our
    ours ourselves out over own re s same shan she should shouldn so some such t than that
    the their theirs them themselves then there these they this those through to too under
    until up ve very was wasn we were weren what when where which while who whom why will
    with won would wouldn y you your yours yourself yourselves""".split()
)

# Words that shape a question but almost never occur in the passage that answers it
# ("What *kind* of car...", "How *many* kids..."). Dropped from queries only.
QUERY_STOPWORDS: frozenset[str] = STOPWORDS | frozenset(
    """anything describe ever kind kinds likely many mention mentioned might much name names
    recent recently something sort thing things type types way ways""".split()
)

_TOKEN = re.compile(r"[a-z0-9]+")
_POSSESSIVE = re.compile(r"'s\b")


def tokenize(text: str) -> list[str]:
    """Lowercased alphanumeric runs; possessive ``'s`` removed so "Mel's" matches "Mel"."""
    text = _POSSESSIVE.sub("", text.lower().replace("\u2019", "'"))
    return _TOKEN.findall(text)


def analyze(text: str, stopwords: frozenset[str] = STOPWORDS) -> list[str]:
    """Tokens minus stopwords, Porter-stemmed: the terms BM25 and the hashing embedder see."""
    return [porter_stem(t) for t in tokenize(text) if t not in stopwords]


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
        return f"bm25-porter-en-v1:k1={self.k1:g}:b={self.b:g}:avg={self.avg_len:g}"

    def encode_document(self, text: str) -> SparseVector:
        terms = analyze(text)
        norm = self.k1 * (1.0 - self.b + self.b * len(terms) / self.avg_len)
        weights = {
            term_index(t): tf * (self.k1 + 1.0) / (tf + norm) for t, tf in Counter(terms).items()
        }
        return _sparse(weights)

    def encode_query(self, text: str) -> SparseVector:
        return _sparse({term_index(t): 1.0 for t in analyze(text, QUERY_STOPWORDS)})


def _sparse(weights: dict[int, float]) -> SparseVector:
    items = sorted(weights.items())
    return SparseVector(tuple(i for i, _ in items), tuple(v for _, v in items))


# --- Porter (1980) stemmer -------------------------------------------------------------
# Written out here because the usual packages (PyStemmer, nltk) are not dependencies, and
# stemming is worth about eight points of recall on conversational memory benchmarks.

_VOWELS = frozenset("aeiou")


def _cons(w: str, i: int) -> bool:
    if w[i] in _VOWELS:
        return False
    if w[i] == "y":
        return i == 0 or not _cons(w, i - 1)
    return True


def _measure(stem: str) -> int:
    """Porter's m: the number of vowel-consonant sequences."""
    n, i, size = 0, 0, len(stem)
    while i < size and _cons(stem, i):
        i += 1
    while i < size:
        while i < size and not _cons(stem, i):
            i += 1
        if i >= size:
            break
        while i < size and _cons(stem, i):
            i += 1
        n += 1
    return n


def _has_vowel(stem: str) -> bool:
    return any(not _cons(stem, i) for i in range(len(stem)))


def _double_cons(w: str) -> bool:
    return len(w) >= 2 and w[-1] == w[-2] and _cons(w, len(w) - 1)


def _cvc(w: str) -> bool:
    n = len(w)
    return (
        n >= 3
        and _cons(w, n - 3)
        and not _cons(w, n - 2)
        and _cons(w, n - 1)
        and w[-1] not in "wxy"
    )


_STEP2 = (
    ("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"),
    ("izer", "ize"), ("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"),
    ("ousli", "ous"), ("ization", "ize"), ("ation", "ate"), ("ator", "ate"),
    ("alism", "al"), ("iveness", "ive"), ("fulness", "ful"), ("ousness", "ous"),
    ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"), ("logi", "log"),
)  # fmt: skip
_STEP3 = (
    ("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"),
    ("ful", ""), ("ness", ""),
)  # fmt: skip
_STEP4 = tuple(
    sorted(
        "al ance ence er ic able ible ant ement ment ent ion ou ism ate iti ous ive ize".split(),
        key=len,
        reverse=True,
    )
)


def _rewrite(w: str, rules: tuple[tuple[str, str], ...]) -> str:
    for suffix, replacement in rules:
        if w.endswith(suffix):
            stem = w[: len(w) - len(suffix)]
            return stem + replacement if _measure(stem) > 0 else w
    return w


def _step1(w: str) -> str:
    if w.endswith(("sses", "ies")):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    stripped = False
    if w.endswith("eed"):
        if _measure(w[:-3]) > 0:
            w = w[:-1]
    elif w.endswith("ed") and _has_vowel(w[:-2]):
        w, stripped = w[:-2], True
    elif w.endswith("ing") and _has_vowel(w[:-3]):
        w, stripped = w[:-3], True
    if stripped:
        if w.endswith(("at", "bl", "iz")):
            w += "e"
        elif _double_cons(w) and w[-1] not in "lsz":
            w = w[:-1]
        elif _measure(w) == 1 and _cvc(w):
            w += "e"
    if w.endswith("y") and _has_vowel(w[:-1]):
        w = w[:-1] + "i"
    return w


@lru_cache(maxsize=262_144)
def porter_stem(word: str) -> str:
    """The Porter stemmer (M.F. Porter, 1980): "painting", "painted" -> "paint"."""
    if len(word) <= 2:
        return word
    w = _rewrite(_rewrite(_step1(word), _STEP2), _STEP3)
    for suffix in _STEP4:
        if w.endswith(suffix):
            stem = w[: len(w) - len(suffix)]
            if _measure(stem) > 1 and (suffix != "ion" or stem.endswith(("s", "t"))):
                w = stem
            break
    if w.endswith("e"):
        stem = w[:-1]
        m = _measure(stem)
        if m > 1 or (m == 1 and not _cvc(stem)):
            w = stem
    if _measure(w) > 1 and _double_cons(w) and w.endswith("l"):
        w = w[:-1]
    return w
