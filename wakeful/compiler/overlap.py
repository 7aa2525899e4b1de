"""How much of an ask a text speaks to: the share of the ask's content words it contains.

Retrieval ranks by fused ranks, whose scores are flat (``1 / (k + rank)``): the hundredth
hit scores nearly what the first does, so a floor on the score means nothing. What a hit
has in common with the ask does: a hit that shares none of the ask's content words was
found through its neighbours or the dense fallback, and is worth its tokens far less often.

Content words are the ask's words of three letters or more that are not among the most
common English function words, folded to lower case, with a plural or past-tense ending
taken off (``parks`` and ``park``, ``painted`` and ``paint`` are one word). Pure and cheap:
it runs on the few hits of a wake's first call, never on the history.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["ask_terms", "is_question", "overlap", "terms"]

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
# The most frequent English function words (and contractions' stems): they carry no topic.
_STOP = frozenset(
    """
    about above after again against all also and any are aren't because been before being
    below between both but can can't cannot could couldn't did didn't does doesn't doing don't
    down during each even ever few for from further get got had hadn't has hasn't have haven't
    having her here hers herself him himself his how i'd i'll i'm i've its it's itself just
    let's like made make many may might more most much must mustn't myself never not now off
    once one only other ought our ours ourselves out over own really same say said shall
    shan't she she'd she'll she's should shouldn't since some still such than that that's
    the their theirs them themselves then there there's these they they'd they'll they're
    they've thing things this those though through too under until upon very was wasn't
    we'd we'll we're we've were weren't what what's when when's where where's which while
    who who's whom whose why why's will with won't would wouldn't yes yet you you'd you'll
    you're you've your yours yourself yourselves
    """.split()
)


def _stem(word: str) -> str:
    if word.endswith("'s"):
        word = word[:-2]
    for end in ("ies", "es", "ed", "s"):
        if word.endswith(end) and len(word) - len(end) >= 3:
            if end == "ies":
                return word[:-3] + "y"
            if end == "s" and word.endswith("ss"):
                return word
            return word[: -len(end)]
    return word


@lru_cache(maxsize=65_536)
def terms(text: str) -> frozenset[str]:
    """The content words of ``text`` (see the module docstring)."""
    return frozenset(
        _stem(w) for w in _WORD.findall(text.lower()) if len(w) >= 3 and w not in _STOP
    )


def ask_terms(text: str) -> frozenset[str]:
    return terms(text)


def overlap(ask: frozenset[str], text: str) -> float:
    """The share of ``ask``'s content words that ``text`` contains (0 for an empty ask)."""
    if not ask:
        return 0.0
    return len(ask & terms(text)) / len(ask)


def is_question(text: str) -> bool:
    """Whether the ask asks something: a sentence of it ends with a question mark."""
    return "?" in text
