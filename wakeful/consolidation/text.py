"""Text primitives the rules, the gate and the probes share.

Everything here is a regular expression over plain text, so a check can be re-run anywhere
without a model. The categories are deliberately conservative: when in doubt a token counts
as something a summary must keep (an id, a number), because a false alarm costs one raw span
kept a little longer, while a miss loses a fact for good.
"""

from __future__ import annotations

import re

# Sentences end at . ! or ? followed by space, or at a line break. A dot inside a token
# (v2.4.1, db-7.internal) is not followed by a space and never splits; neither does a
# semicolon, which joins the halves of one rule ("do not touch X; it is frozen").
_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")

# Registry ids: an upper-case prefix, a dash, digits (C-7, DEC-12, LB-412-2, CVE-2024-1234).
REGISTRY_ID = re.compile(r"(?<![\w-])[A-Z][A-Z0-9]{0,9}-\d+(?:[-.]\d+)*(?![\w-])")
# Calendar dates are one token, so 2025-06-01 is not read as 2025, 06 and 01.
_DATE = re.compile(r"(?<![\w-])\d{4}-\d{2}-\d{2}(?:T[\d:.]+Z?)?(?![\w-])")
# Numbers and version strings standing alone: 5433, 0.5, 14:30, 1,000, 99.9%, v2.4.1-rc1.
# A digit glued to letters or a dash (db-7, p99, e12, UTF-8) belongs to an identifier.
_NUMERAL = re.compile(
    r"(?<![\w/-])v?\d+(?:[.:,]\d+)*(?:-(?:rc|alpha|beta|dev|pre)\.?\d*)?%?(?![\w-])"
)
NEGATION = re.compile(
    r"\b(?:not|never|no|none|nobody|nothing|neither|nor|cannot|without|forbidden|prohibited)\b"
    r"|\b\w+n't\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[a-z0-9@][a-z0-9@_./:+-]*", re.IGNORECASE)
STOPWORDS = frozenset(
    """a an the and or but if then than so of to in on at by for with from into onto over
    under as is are was were be been being am do does did done has have had having it its
    this that these those there here we you i he she they them us our your my me him her
    their what which who whom whose when where why how all any both each few more most other
    some such own same too very can will just should would could shall may might must also
    now new yet still please ok okay let lets let's about again once up down out off""".split()
)


def normalise(text: str) -> str:
    """Curly quotes to straight ones: ``don’t`` and ``don't`` are the same negation."""
    return (
        text.replace("\u2019", "'")
        .replace("\u2018", "'")
        .replace("\u201c", '"')
        .replace("\u201d", '"')
    )


def sentences(text: str) -> list[str]:
    """Sentences (and bullet lines) of ``text``, stripped, empty ones dropped."""
    out = []
    for raw in _SPLIT.split(normalise(text)):
        s = _BULLET.sub("", raw).strip()
        if s:
            out.append(s)
    return out


def words(text: str) -> list[str]:
    """Lower-case word tokens, trailing punctuation stripped."""
    return [w.lower().rstrip(".,:;!?)'\"") for w in _WORD.findall(normalise(text))]


def content_words(text: str) -> frozenset[str]:
    """The words that carry meaning: no stopwords, no negation cues, nothing empty."""
    return frozenset(
        w for w in words(text) if w and w not in STOPWORDS and not NEGATION.fullmatch(w)
    )


def registry_ids(text: str) -> list[str]:
    """Registry-style ids in order of first appearance."""
    return list(dict.fromkeys(REGISTRY_ID.findall(text)))


def numerals(text: str) -> set[str]:
    """Dates, numbers and version strings that stand alone in ``text``."""
    found = set(_DATE.findall(text))
    rest = _DATE.sub(" ", text)
    rest = REGISTRY_ID.sub(" ", rest)  # the digits of an id are the id's, checked as ids
    found.update(m.rstrip(",") for m in _NUMERAL.findall(rest))
    return {f for f in found if f}


def negated(text: str) -> bool:
    return NEGATION.search(normalise(text)) is not None


def contains_token(haystack: str, needle: str) -> bool:
    """``needle`` occurs in ``haystack`` as a whole token (case-insensitive)."""
    pattern = r"(?<![\w.-])" + re.escape(needle) + r"(?![\w-]|\.\w)"
    return re.search(pattern, normalise(haystack), re.IGNORECASE) is not None


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """Share of ``a`` found in ``b`` (1.0 for an empty ``a``)."""
    return 1.0 if not a else len(a & b) / len(a)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return 1.0 if not a and not b else len(a & b) / len(a | b)
