"""The model's own turns, as it wrote them.

A reply is stored one event per block, in the provider's order: each text block a turn,
each tool call a ``tool_call`` block whose ``text`` is its arguments as the provider spelled
them (``activities.wake.record_reply``), every one tagged with ``meta["reply"]``. The
renderers send a reply back as the one assistant message it was — its blocks in order, the
same ids, the same arguments, no text it never wrote — whether it is in the current wake or
in the history, so the prefix a provider cached stays the prefix of every later call.
"""

from __future__ import annotations

import json
from typing import Any

from wakeful.compiler.blocks import Block, BlockKind
from wakeful.compiler.canonical import canonical_json

__all__ = ["REPLY_META", "call_arguments", "reply_key"]

REPLY_META = "reply"  # Block.meta key: the model call (within its wake) a block came from


def reply_key(block: Block) -> str | None:
    """Which reply ``block`` belongs to (wake and call), or None when it is not known
    (events recorded before replies were tagged, or blocks that are no reply's)."""
    n = block.meta.get(REPLY_META)
    return None if n is None else f"{block.wake_id or ''}/{n}"


def call_arguments(block: Block) -> str:
    """A tool call's arguments as a JSON string: the provider's own spelling (the block's
    text) when it says what ``tool_input`` says, else the canonical JSON of ``tool_input``
    (calls built without their spelling, e.g. in tests)."""
    args = block.tool_input if block.tool_input is not None else {}
    text = block.text
    if text and block.kind is BlockKind.TOOL_CALL and _spells(text, args):
        return text
    return canonical_json(args)


def _spells(text: str, args: dict[str, Any]) -> bool:
    """True when ``text`` is the JSON ``args`` was parsed from (providers keep unparsable
    arguments as ``{"_raw": text}`` and non-objects as ``{"_value": value}``)."""
    if args == {"_raw": text}:
        return True
    try:
        parsed = json.loads(text)
    except ValueError:
        return False
    if isinstance(parsed, dict):
        return canonical_json(parsed) == canonical_json(args)
    return args == {"_value": parsed}
