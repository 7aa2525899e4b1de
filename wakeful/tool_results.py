"""Tool results too long for a window: stored whole, shown in part, read in pages.

A tool may return megabytes (a log, a query result). Put in the window whole it would not
fit, and the wake would end for its budget. Instead, a result longer than its tool's
``max_result_chars`` is stored whole (it always is: the ``result_blob`` of its event), and
its event holds the head and the tail with a line between them. That line names the
omitted characters and a handle, and the built-in :data:`READ_RESULT` tool reads on from
any offset. The tool's schema joins the window's tools only while a shortened result is
in it.
"""

from __future__ import annotations

from typing import Any

# An event's meta: the whole result's length, in characters (its block carries it too).
from wakeful.compiler.blocks import CAPPED_META
from wakeful.compiler.oversize import head_and_tail

__all__ = ["CAPPED_META", "PAGE_CHARS", "READ_RESULT", "page", "read_result_schema", "shorten"]

READ_RESULT = "read_result"
PAGE_CHARS = 8_000  # what one read_result call returns at most


def shorten(text: str, limit: int, handle: str) -> str:
    """``text`` within ``limit`` characters: its head (three quarters of the room) and its
    tail, with a line between them saying what is left out and how to read it (the form
    the compiler shows an oversized user turn in, too: ``compiler.oversize``)."""
    return head_and_tail(text, limit, handle)


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


def page(text: str, offset: int) -> str:
    """One page of a stored result from ``offset``, and where the next one starts."""
    if offset >= len(text):
        return f"[offset {offset:,} is past the end: the result has {len(text):,} characters]"
    chunk = text[offset : offset + PAGE_CHARS]
    end = offset + len(chunk)
    more = (
        f"\n\n[characters {offset:,}-{end:,} of {len(text):,}; next: offset={end}]"
        if end < len(text)
        else f"\n\n[characters {offset:,}-{end:,} of {len(text):,}: the end]"
    )
    return chunk + more
