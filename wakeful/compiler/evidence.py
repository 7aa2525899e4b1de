"""A wake's recorded evidence: what retrieval brought it, sent again where it was first sent.

The first call of a wake places the evidence it brings after the wake's content
(``place``); the compile activity records that text with the wake as an ``evidence`` event,
which the snapshot hands back as a user turn whose meta lists the blocks it holds
(:data:`EVIDENCE_META`). Every later window sends that turn in place (the wake's later
calls, and later wakes as history) and leaves out the blocks it holds
(:func:`held_by_evidence`): sent again as new evidence they would repeat themselves and
rewrite the prompt cache after the current wake.

A block is left out only while its content is what was recorded: the evidence lists each
block's content hash too (:data:`EVIDENCE_HASHES_META`). A layer whose block keeps its id
and changes its content (an agent's own ``ContextSource`` reading ``git status``) brings
its current content to every wake, as new evidence after the wake's content, where it
leaves the cached prefix as it was. Evidence recorded before the hashes were kept lists
ids only, and holds its blocks by id as it did.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import compress, repeat
from operator import attrgetter, is_not

from wakeful.compiler.blocks import EVIDENCE_META, Block, BlockKind
from wakeful.compiler.facts import Facts
from wakeful.compiler.positions import Positions

__all__ = [
    "EVIDENCE_HASHES_META",
    "EVIDENCE_META",
    "held_by_evidence",
    "is_evidence",
    "recorded",
]

# EVIDENCE_META, the meta key of a wake's recorded evidence: its value is the ids of the
# blocks it holds, space-separated (``CompiledWindow.evidence_blocks``). The pipeline finds
# them on the facts (``Facts.holds``), which are kept from one compile to the next.
# The content hashes of those blocks (``Block.hash``), space-separated, in the same order.
EVIDENCE_HASHES_META = "evidence_hashes"

_HOLDS = attrgetter("holds")
_ID = attrgetter("id")


def is_evidence(block: Block) -> bool:
    """Whether ``block`` is a wake's recorded evidence (sent as recorded, never merged)."""
    return block.kind is BlockKind.TURN and EVIDENCE_META in block.meta


def recorded(blocks: Iterable[Block]) -> dict[str, set[str] | None]:
    """Each block id the recorded evidence among ``blocks`` holds, with the content hashes
    it was recorded with (None: recorded without them, held whatever its content)."""
    out: dict[str, set[str] | None] = {}
    for b in blocks:
        if not is_evidence(b):
            continue
        ids = b.meta[EVIDENCE_META].split()
        hashes = b.meta.get(EVIDENCE_HASHES_META, "").split()
        if len(hashes) != len(ids):  # recorded before hashes were kept
            out.update(dict.fromkeys(ids))
            continue
        for ident, digest in zip(ids, hashes, strict=True):
            known = out.get(ident, set())
            if known is not None:  # None: held by id already
                out[ident] = known | {digest}
    return out


def _holding(facts: Sequence[Facts]) -> Iterable[bool]:
    return map(is_not, map(_HOLDS, facts), repeat(None))


def held_by_evidence(snap: Sequence[Facts], marks: Positions | None = None) -> list[int]:
    """The indexes of the blocks the recorded evidence among ``snap`` holds, ascending
    (what the pipeline leaves out), found at C speed on the facts. ``marks`` (on
    ``snap``) only saves work."""
    if marks is not None:
        holders = [snap[n] for n in marks.of("holds", _holding)]
    else:
        holders = list(compress(snap, _holding(snap)))
    if not holders:
        return []
    held: set[str] = set()
    for f in holders:
        held.update(f.holds.split())  # type: ignore[union-attr]
    found = compress(range(len(snap)), map(held.__contains__, map(_ID, snap)))
    held_now = [n for n in found if snap[n].holds is None]
    if not held_now:
        return held_now
    # Held only while the content is as recorded (a layer's block may keep its id and
    # change): checked on the few blocks held, not on the snapshot.
    as_recorded = recorded(f.block for f in holders)
    return [n for n in held_now if _as_recorded(as_recorded[snap[n].id], snap[n])]


def _as_recorded(hashes: set[str] | None, f: Facts) -> bool:
    return hashes is None or f.block.hash in hashes
