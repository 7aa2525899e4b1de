"""A wake's recorded evidence: what retrieval brought it, sent again where it was first sent.

The first call of a wake places the evidence it brings after the wake's content
(``place``); the compile activity records that text with the wake as an ``evidence`` event,
which the snapshot hands back as a user turn whose meta lists the blocks it holds
(:data:`EVIDENCE_META`). Every later window sends that turn in place (the wake's later
calls, and later wakes as history) and leaves out the blocks it holds
(:func:`without_recorded`): sent again as new evidence they would repeat themselves and
rewrite the prompt cache after the current wake.

A block is left out only while its content is what was recorded: the evidence lists each
block's content hash too (:data:`EVIDENCE_HASHES_META`). A layer whose block keeps its id
and changes its content (an agent's own ``ContextSource`` reading ``git status``) brings
its current content to every wake, as new evidence after the wake's content, where it
leaves the cached prefix as it was. Evidence recorded before the hashes were kept lists
ids only, and holds its blocks by id as it did.
"""

from __future__ import annotations

from collections.abc import Iterable

from wakeful.compiler.blocks import Block, BlockKind, Snapshot

__all__ = [
    "EVIDENCE_HASHES_META",
    "EVIDENCE_META",
    "is_evidence",
    "recorded",
    "recorded_ids",
    "without_recorded",
]

# The meta key of a wake's recorded evidence; its value is the ids of the blocks it holds,
# space-separated (``CompiledWindow.evidence_blocks``).
EVIDENCE_META = "evidence"
# The content hashes of those blocks (``Block.hash``), space-separated, in the same order.
EVIDENCE_HASHES_META = "evidence_hashes"


def is_evidence(block: Block) -> bool:
    """Whether ``block`` is a wake's recorded evidence (sent as recorded, never merged)."""
    return block.kind is BlockKind.TURN and EVIDENCE_META in block.meta


def recorded_ids(blocks: Iterable[Block]) -> set[str]:
    """Ids of the blocks that the recorded evidence among ``blocks`` holds."""
    out: set[str] = set()
    for b in blocks:
        if is_evidence(b):
            out.update(b.meta[EVIDENCE_META].split())
    return out


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


def without_recorded(snapshot: Snapshot) -> Snapshot:
    """The snapshot less the blocks its recorded evidence holds (memories, retrieved chunks,
    tool output without a call: whatever the evidence segment held), each as recorded: a
    block whose content has changed since is kept, to be sent as it is now."""
    held = recorded(snapshot.blocks)
    if not held:
        return snapshot

    def sent(b: Block) -> bool:
        if b.id not in held or is_evidence(b):
            return False
        hashes = held[b.id]
        return hashes is None or b.hash in hashes

    kept = tuple(b for b in snapshot.blocks if not sent(b))
    return snapshot.model_copy(update={"blocks": kept})
