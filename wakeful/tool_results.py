"""Tool results too long for a window: stored whole, shown in part, read in pages.

A tool may return megabytes (a log, a query result). Put in the window whole it would not
fit, and the wake would end for its budget. Instead, a result longer than its tool's
``max_result_chars``, or than its share of the agent's window in tokens
(:func:`result_token_cap`), is stored whole (it always is: the ``result_blob`` of its
event), and its event holds the head and the tail with a line between them. That line
names the omitted characters and a handle, and the built-in :data:`READ_RESULT` tool reads
on from any offset, a page at a time, each page within the same share. The tool's schema
joins the window's tools only while a shortened result is in it.

The share follows the window: a result of the current wake is never evicted, so one that
takes more than the window holds ends the wake with a budget error. The results of one
model reply share :data:`RESULT_SHARE` of the input budget (``context_limit -
output_reserve``); 40,000 characters are some 10,000 tokens, a twentieth of a 200k window
but more than a small model's whole context.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# An event's meta: the whole result's length, in characters (its block carries it too).
from wakeful.compiler.blocks import CAPPED_META
from wakeful.compiler.oversize import WHOLE_TEXT_META, cut_between

__all__ = [
    "CAPPED_META",
    "HANDLE_METAS",
    "PAGE_CHARS",
    "READ_RESULT",
    "RESULT_BLOB_META",
    "RESULT_SHARE",
    "Count",
    "page",
    "read_result_schema",
    "result_token_cap",
    "shorten",
]

READ_RESULT = "read_result"
# A tool result's meta: the hash of its whole text, the handle its note names.
RESULT_BLOB_META = "result_blob"
# The meta keys of an event (a tool result, a user turn shown in part) whose blobs
# ``read_result`` may read for its agent.
HANDLE_METAS: tuple[str, ...] = (RESULT_BLOB_META, WHOLE_TEXT_META)
PAGE_CHARS = 8_000  # what one read_result call returns at most
# The share of the agent's input budget that the results of one model reply may take.
RESULT_SHARE = 0.25
# The fewest tokens a result is cut to, however small the window: the note alone is ~40.
MIN_RESULT_TOKENS = 200

Count = Callable[[str], int]  # a token counter's ``count``


def result_token_cap(input_budget: int, calls: int = 1) -> int:
    """The tokens one of ``calls`` tool results of a reply may take in a window of
    ``input_budget`` tokens (``context_limit - output_reserve``)."""
    return max(MIN_RESULT_TOKENS, int(input_budget * RESULT_SHARE) // max(1, calls))


def shorten(
    text: str,
    limit: int,
    handle: str,
    *,
    max_tokens: int | None = None,
    count: Count | None = None,
) -> str:
    """``text`` within ``limit`` characters (and ``max_tokens`` tokens as ``count`` counts
    them): its head (three quarters of the room) and its tail, with a line between them
    saying what is left out and how to read it (the form the compiler shows an oversized
    user turn in, too: ``compiler.oversize``)."""
    if len(text) <= limit and (max_tokens is None or count is None or count(text) <= max_tokens):
        return text
    room = min(limit, len(text))
    head_chars, tail_chars = room * 3 // 4, room // 4
    if max_tokens is not None and count is not None:
        # The note takes ~40 tokens; a quarter of the rest goes to the tail, as in characters.
        tokens = max(0, max_tokens - _NOTE_TOKENS)
        head_chars = _fitting(lambda n: count(text[:n]), head_chars, tokens * 3 // 4)
        tail_chars = _fitting(lambda n: count(text[len(text) - n :]), tail_chars, tokens // 4)
    return cut_between(text, head_chars, tail_chars, handle)


_NOTE_TOKENS = 60  # what shorten's note takes, with room to spare


def _fitting(tokens_of: Callable[[int], int], most: int, budget: int) -> int:
    """The largest ``n <= most`` whose ``tokens_of(n)`` is within ``budget`` (a binary
    search: token counts grow with the text, so a cut is found in a few counts)."""
    if tokens_of(most) <= budget:
        return most
    low, high = 0, most  # tokens_of(low) fits, tokens_of(high) does not
    while high - low > 1:
        mid = (low + high) // 2
        if tokens_of(mid) <= budget:
            low = mid
        else:
            high = mid
    return low


def read_result_schema() -> dict[str, Any]:
    """The built-in tool's block, as the compile activity adds it to the agent's tools."""
    return {
        "name": READ_RESULT,
        "description": (
            "Read a page of a tool result that was too long to show whole: the handle and "
            f"offset its note gives; at most {PAGE_CHARS:,} characters per call."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "handle": {"type": "string", "description": "The handle the note names."},
                "offset": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Character offset to read from.",
                },
            },
            "required": ["handle"],
            "additionalProperties": False,
        },
    }


def page(
    text: str, offset: int, *, max_tokens: int | None = None, count: Count | None = None
) -> str:
    """One page of a stored result from ``offset`` (at most :data:`PAGE_CHARS` characters,
    and ``max_tokens`` tokens as ``count`` counts them), and where the next one starts."""
    if offset >= len(text):
        return f"[offset {offset:,} is past the end: the result has {len(text):,} characters]"
    size = min(PAGE_CHARS, len(text) - offset)
    if max_tokens is not None and count is not None:
        room = max(0, max_tokens - _NOTE_TOKENS)  # the line after the page
        size = max(1, _fitting(lambda n: count(text[offset : offset + n]), size, room))
    chunk = text[offset : offset + size]
    end = offset + len(chunk)
    more = (
        f"\n\n[characters {offset:,}-{end:,} of {len(text):,}; next: offset={end}]"
        if end < len(text)
        else f"\n\n[characters {offset:,}-{end:,} of {len(text):,}: the end]"
    )
    return chunk + more
