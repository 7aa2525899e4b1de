"""A wake's recorded evidence: what retrieval brought it, sent again where it was first sent.

The first call of a wake places the evidence it brings after the wake's content
(``place``); the compile activity records that text with the wake as an ``evidence`` event,
which the snapshot hands back as a user turn whose meta lists the blocks it holds
(:data:`EVIDENCE_META`). Every later window sends that turn in place (the wake's later
calls, and later wakes as history) and leaves out the blocks it holds
(:func:`without_recorded`): sent again as new evidence they would repeat themselves and
rewrite the prompt cache after the current wake.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import compress, repeat
from operator import attrgetter, contains, is_not

from wakeful.compiler.blocks import EVIDENCE_META, Block, BlockKind, Snapshot
from wakeful.compiler.facts import Facts

__all__ = ["EVIDENCE_META", "held_by_evidence", "is_evidence", "recorded_ids", "without_recorded"]

# EVIDENCE_META, the meta key of a wake's recorded evidence: its value is the ids of the
# blocks it holds, space-separated (``CompiledWindow.evidence_blocks``). The pipeline finds
# them on the facts (``Facts.holds``), which are kept from one compile to the next.

_META = attrgetter("meta")
_HOLDS = attrgetter("holds")
_ID = attrgetter("id")


def is_evidence(block: Block) -> bool:
    """Whether ``block`` is a wake's recorded evidence (sent as recorded, never merged)."""
    return block.kind is BlockKind.TURN and EVIDENCE_META in block.meta


def recorded_ids(blocks: Iterable[Block]) -> set[str]:
    """Ids of the blocks that the recorded evidence among ``blocks`` holds."""
    out: set[str] = set()
    blocks = list(blocks)
    # The blocks whose meta has the key, found at C speed: a snapshot holds few of them.
    for b in compress(blocks, map(contains, map(_META, blocks), repeat(EVIDENCE_META))):
        if is_evidence(b):
            out.update(b.meta[EVIDENCE_META].split())
    return out


def without_recorded(snapshot: Snapshot) -> Snapshot:
    """The snapshot less the blocks its recorded evidence holds (memories, retrieved chunks,
    tool output without a call: whatever the evidence segment held)."""
    held = recorded_ids(snapshot.blocks)
    if not held:
        return snapshot
    kept = tuple(b for b in snapshot.blocks if b.id not in held or is_evidence(b))
    return snapshot.model_copy(update={"blocks": kept})


def held_by_evidence(snap: Sequence[Facts]) -> list[int]:
    """The indexes of the blocks the recorded evidence among ``snap`` holds, ascending
    (what :func:`without_recorded` leaves out), found at C speed on the facts."""
    holders = list(compress(snap, map(is_not, map(_HOLDS, snap), repeat(None))))
    if not holders:
        return []
    held: set[str] = set()
    for f in holders:
        held.update(f.holds.split())  # type: ignore[union-attr]
    found = compress(range(len(snap)), map(held.__contains__, map(_ID, snap)))
    return [n for n in found if snap[n].holds is None]
