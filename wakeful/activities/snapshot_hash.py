"""The snapshot hash a compile records and ``wakeful replay`` checks.

Canonical (key-sorted JSON): stored JSON may come back with its keys reordered. It hashes the
snapshot's fields and each block's own hash, so a block hashed before costs a lookup in a
:class:`BlockHashes` memo — compile after compile, most blocks of a snapshot are the very
same objects (the tail cache hands them out again). The memo is the caller's (the worker
keeps one in its :class:`~wakeful.activities.deps.ActivityDeps`); without one every block is
hashed afresh, with the same result.
"""

from __future__ import annotations

import hashlib

from wakeful.compiler.blocks import Block, Snapshot, content_hash
from wakeful.compiler.canonical import recorded_json
from wakeful.substrate.sized_lru import SizedLRU

__all__ = ["BlockHashes", "snapshot_hash"]

# A hash of this form is a hash of the snapshot's fields and of each block's hash.
_BY_BLOCK = "s2:"


def _canonical(value: object) -> str:
    return recorded_json(value)  # frozen: stored s2 hashes must keep matching


def _hash_block(block: Block) -> str:
    return content_hash(_canonical(block.model_dump(mode="json")))


class BlockHashes:
    """Block hashes by block identity, bounded by the text of the blocks they hold. An
    entry holds its block, so the block's ``id()`` is not reused while the entry lives."""

    def __init__(self, max_chars: int = 64_000_000) -> None:
        self._made: SizedLRU[int, tuple[Block, str]] = SizedLRU(
            max_chars, lambda made: len(made[0].text) + 256
        )

    def __len__(self) -> int:
        return len(self._made)

    def of(self, block: Block) -> str:
        made = self._made.get(id(block))
        if made is None or made[0] is not block:
            made = (block, _hash_block(block))
            self._made.put(id(block), made)
        return made[1]


def snapshot_hash(
    snapshot: Snapshot, *, like: str | None = None, memo: BlockHashes | None = None
) -> str:
    """The snapshot's hash. ``like`` (a stored hash) picks the form it was made in:
    compiles recorded before block hashes hashed the whole snapshot as one document."""
    if like is not None and not like.startswith(_BY_BLOCK):
        return content_hash(_canonical(snapshot.model_dump(mode="json")))
    block_hash = memo.of if memo is not None else _hash_block
    fields = _canonical(snapshot.model_dump(mode="json", exclude={"blocks"}))
    h = hashlib.blake2b(fields.encode(), digest_size=16)
    for block in snapshot.blocks:
        h.update(bytes.fromhex(block_hash(block)))
    return _BY_BLOCK + h.hexdigest()
