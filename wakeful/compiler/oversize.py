"""Oversized events: a user turn too large for its share of the window is shown in part.

A webhook may carry a quarter of a megabyte of text, and a message may be as long. Sent
whole, one such turn fills a small window by itself, and every later window of its session
carries it (or a summary as large) until the wake's token budget runs out. So a user turn
larger than its share of the window is shown as a tool result too long for a window is
(``wakeful.tool_results``): its head (three quarters of the room) and its tail, with a line
between them naming the omitted characters and — when the substrate stored the whole text
as a blob (:data:`WHOLE_TEXT_META`, the handle) — how to read on with the built-in
``read_result`` tool. The event itself stays whole in the log.

A turn's share is ``budget.allocations.ask`` of the input budget, the room the current
wake is given to grow in (at least :data:`MIN_EVENT_TOKENS`): the turn that opens a wake
then fits beside what the window must hold anyway. A summary's is half the summaries
allocation (:func:`summary_token_limit`, the most consolidation's gate lets one take): one
stored before the gate held summaries to it is shown head and tail too, with no handle
(its whole text stays in the summaries table). A shortened block carries
``CAPPED_META`` (its whole length), so ``read_result`` joins the window's tools while it is
in the snapshot (``clearing.py``). What is shortened, and how, follows from the snapshot
and the budget alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from itertools import compress
from operator import attrgetter

from wakeful.compiler.blocks import CAPPED_META, Block, BlockKind, Role, Snapshot
from wakeful.compiler.evidence import EVIDENCE_META
from wakeful.compiler.facts import Facts
from wakeful.compiler.policy import Budget
from wakeful.compiler.positions import Positions

__all__ = [
    "MIN_EVENT_TOKENS",
    "WHOLE_TEXT_META",
    "event_token_limit",
    "head_and_tail",
    "shorten_oversized",
    "summary_token_limit",
]

# A user turn's meta: the blob holding its whole text (the handle ``read_result`` reads).
WHOLE_TEXT_META = "text_blob"
# However small the window's ask share, a turn of this many tokens is shown whole.
MIN_EVENT_TOKENS = 256
# Two summaries this large fill the summaries allocation, so the newest session summary and
# a period summary always fit side by side.
SUMMARY_BUCKET_SHARE = 0.5
# Room a note takes besides the kept text (its counted size is checked anyway).
_NOTE_TOKENS = 64


def head_and_tail(text: str, limit: int, handle: str | None) -> str:
    """``text`` within ``limit`` characters: its head (three quarters of the room) and its
    tail, with a line between them saying what is left out and, given a ``handle``, how to
    read it."""
    if len(text) <= limit:
        return text
    return cut_between(text, limit * 3 // 4, limit // 4, handle)


def cut_between(text: str, head_chars: int, tail_chars: int, handle: str | None) -> str:
    """``text``'s first ``head_chars`` and last ``tail_chars`` characters, with a line
    between them saying what is left out and, given a ``handle``, how to read it."""
    head = text[:head_chars]
    tail = text[len(text) - tail_chars :] if tail_chars else ""
    omitted = len(text) - len(head) - len(tail)
    how = (
        f' Read on with read_result(handle="{handle}", offset={len(head)})'
        if handle is not None
        else ""
    )
    note = f"\n\n[... {omitted:,} of {len(text):,} characters omitted.{how} ...]\n\n"
    return head + note + tail


def event_token_limit(spec: Budget) -> int:
    """The most tokens one user turn may take in a window of ``spec``."""
    return max(MIN_EVENT_TOKENS, int(spec.input_budget * spec.allocations.ask))


def summary_token_limit(spec: Budget) -> int:
    """The most tokens one summary may take in a window of ``spec``."""
    return int(spec.input_budget * spec.allocations.summaries * SUMMARY_BUCKET_SHARE)


def fit_tokens(text: str, limit: int, handle: str | None, count: Callable[[str], int]) -> str:
    """``text`` shown head and tail within ``limit`` tokens (itself when it fits)."""
    tokens = count(text)
    if tokens <= limit:
        return text
    room = max(0, limit - _NOTE_TOKENS)
    chars = len(text) * room // tokens
    while True:
        shown = head_and_tail(text, chars, handle)
        if chars == 0 or count(shown) <= limit:
            return shown
        chars = chars * 7 // 8  # tokens are not spread evenly: take less and count again


def _limit(block: Block, turns: int, summaries: int) -> int | None:
    """The most tokens ``block`` may take (None: any number)."""
    if CAPPED_META in block.meta:
        return None
    if block.kind is BlockKind.SUMMARY:
        return summaries
    if (
        block.kind is BlockKind.TURN
        and block.role is Role.USER
        and EVIDENCE_META not in block.meta  # a wake's evidence is sent as recorded
    ):
        return turns
    return None


_TOKENS = attrgetter("tokens")


def _over(limit: int, facts: Sequence[Facts]) -> Iterable[bool]:
    return map(limit.__lt__, map(_TOKENS, facts))


def shorten_oversized(
    snapshot: Snapshot,
    snap: Sequence[Facts],
    spec: Budget,
    count: Callable[[str], int],
    marks: Positions | None = None,
) -> Snapshot:
    """The snapshot with each user turn and summary over its share shown head and tail;
    the very same object when none is. ``marks`` (on ``snap``) only saves work."""
    turns, summaries = event_token_limit(spec), summary_token_limit(spec)
    smallest = min(turns, summaries)
    shortened: dict[int, Block] = {}
    # Few blocks are over the smaller share: found at C speed, not by a loop over history,
    # and carried over from the last snapshot when it was edited in one place.
    if marks is not None:
        over: Iterable[int] = marks.of(("over", smallest), partial(_over, smallest))
    else:
        over = compress(range(len(snap)), _over(smallest, snap))
    for n in over:
        f = snap[n]
        block = f.block
        limit = _limit(block, turns, summaries)
        if limit is None or f.tokens <= limit:
            continue
        text = fit_tokens(block.text, limit, block.meta.get(WHOLE_TEXT_META), count)
        if text != block.text:
            meta = {**block.meta, CAPPED_META: str(len(block.text))}
            shortened[n] = block.model_copy(update={"text": text, "meta": meta})
    if not shortened:
        return snapshot
    blocks = tuple(shortened.get(n, b) for n, b in enumerate(snapshot.blocks))
    return snapshot.model_copy(update={"blocks": blocks})
