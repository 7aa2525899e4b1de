"""Where a snapshot's raw tail starts: on a page boundary of the agent's event ordinals."""

from __future__ import annotations

__all__ = ["tail_start"]


def tail_start(total: int, limit: int, page: int) -> int:
    """The ordinal of the first event of the tail, given ``total`` events.

    It is the largest multiple of ``page`` at or below the ordinal of the ``limit``-th
    newest event, so the tail holds ``limit`` to ``limit + page - 1`` events and its start
    moves once every ``page`` events (0 while there are no more than ``limit``).
    """
    if limit < 1 or page < 1:
        raise ValueError(f"limit and page must be >= 1 (got limit={limit}, page={page})")
    kth = max(0, total - limit)
    return kth - kth % page
