"""Side requests the simulator answers itself (a goal's intent classification, a session's
handoff note) are known by the header their prompt opens with: the last turn's text."""

from __future__ import annotations

from typing import Any

__all__ = ["last_turn_opens_with"]


def last_turn_opens_with(body: Any, header: str) -> bool:
    """Whether the last turn of a request body (any wire format: Messages, Chat or
    Responses) opens with ``header``; a turn of content blocks is read by its first one."""
    if not isinstance(body, dict):
        return False
    turns = body.get("messages") or body.get("input")
    if not isinstance(turns, list) or not turns or not isinstance(turns[-1], dict):
        return False
    content = turns[-1].get("content")
    if isinstance(content, list):  # content blocks: the first text block
        content = next((b.get("text") for b in content if isinstance(b, dict)), None)
    return isinstance(content, str) and content.lstrip().startswith(header)
