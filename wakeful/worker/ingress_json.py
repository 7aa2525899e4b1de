"""The nesting limit every JSON body of the ingress is held to, checked before it is parsed.

Python's ``json`` parser recurses once per level of arrays and objects, so a body of a few
thousand brackets (``[[[[...]]]]``) exhausts the stack and would be answered 500. Every JSON
route of the ingress (webhooks, approvals) parses with :func:`loads`, which counts the depth
first and raises :class:`TooDeep`, answered 400 with one line.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

__all__ = ["MAX_JSON_DEPTH", "TooDeep", "check_depth", "loads"]

MAX_JSON_DEPTH = 32
# A JSON string, escapes included: its brackets are text, not nesting.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class TooDeep(ValueError):
    """A JSON document nests deeper than the limit; the message is the one-line answer."""

    def __init__(self, limit: int = MAX_JSON_DEPTH) -> None:
        super().__init__(
            f"body nests deeper than {limit} levels of arrays and objects; send flatter JSON"
        )


def check_depth(text: str, limit: int = MAX_JSON_DEPTH) -> None:
    """Raise :class:`TooDeep` if the JSON ``text`` opens more than ``limit`` arrays or
    objects inside one another. Brackets inside strings do not count. Strings and other
    characters are dropped by regular expressions and the brackets summed by iterators, all
    in C rather than a Python step per character: a 256 KB body full of brackets takes tens
    of milliseconds, a few times what parsing it takes."""
    if text.count("[") + text.count("{") <= limit:
        return  # it cannot nest deeper than it has brackets
    brackets = _NOT_BRACKETS.sub("", _STRING.sub("", text))
    if max(accumulate(map(_STEP.__getitem__, brackets)), default=0) > limit:
        raise TooDeep(limit)


def loads(text: str, **kwargs: Any) -> Any:
    """``json.loads`` of a body whose depth is checked first, so parsing never recurses past
    :data:`MAX_JSON_DEPTH` levels (:class:`TooDeep`; other errors as ``json.loads``)."""
    check_depth(text)
    try:
        return json.loads(text, **kwargs)
    except RecursionError:  # not reached after the check; kept so no depth is ever a 500
        raise TooDeep() from None
