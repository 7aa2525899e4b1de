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

An ended wake's evidence is carried into later wakes only while keeping it is cheaper than
fetching it again (:func:`carried`). Keeping it costs a cache read of all of it on every
later call; leaving it out costs, once, rewriting what followed it in its wake (the
model's reply, the wake's tool traffic: the cached prefix breaks where the evidence was),
and whatever of it a later wake needs comes back through retrieval, after that wake's
content. Evidence followed only by a short reply goes at the next wake; evidence a long
run of tool calls followed stays. Both sides of the comparison are fixed once the wake has
ended, so every later compile decides the same and the prefix breaks at most once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import compress, islice, repeat
from operator import attrgetter, is_not

from wakeful.compiler.blocks import EVIDENCE_META, Block, BlockKind
from wakeful.compiler.facts import Exclusion, Facts
from wakeful.compiler.positions import Positions
from wakeful.compiler.work import Work

__all__ = [
    "CACHE_READ",
    "CACHE_WRITE",
    "EVIDENCE_HASHES_META",
    "EVIDENCE_META",
    "carried",
    "held_by_evidence",
    "is_evidence",
    "leave_out_spent",
    "not_carried",
    "recorded",
    "spent",
]

# EVIDENCE_META, the meta key of a wake's recorded evidence: its value is the ids of the
# blocks it holds, space-separated (``CompiledWindow.evidence_blocks``). The pipeline finds
# them on the facts (``Facts.holds``), which are kept from one compile to the next.
# The content hashes of those blocks (``Block.hash``), space-separated, in the same order.
EVIDENCE_HASHES_META = "evidence_hashes"

_HOLDS = attrgetter("holds")
_ID = attrgetter("id")

# Prices of a cache write and a cache read relative to plain input (Anthropic's 5-minute
# entries; OpenAI writes at the input price and reads cheaper still, so the same choice
# holds there).
CACHE_WRITE = 1.25
CACHE_READ = 0.1


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


def _chars(block: Block) -> int:
    return len(block.text) + (len(str(block.tool_input)) if block.tool_input else 0)


def carried(
    evidence: Block, following: Iterable[Block], current_wake: str | None, keep_for_calls: int
) -> bool:
    """Whether the recorded ``evidence`` is sent with this window: always in its own wake;
    in a later one while reading it on ``keep_for_calls`` later calls costs less than
    rewriting what followed it in its wake (the blocks after it in ``following`` with its
    wake id, measured in characters, which both sides share; see the module docstring).
    ``keep_for_calls`` 0 carries every wake's evidence."""
    wake = evidence.wake_id
    if keep_for_calls <= 0 or wake is None or wake == current_wake:
        return True
    after = 0
    for later in following:
        if later.wake_id != wake:
            break
        after += _chars(later)
    keep = len(evidence.text) * CACHE_READ * keep_for_calls
    return keep < after * (CACHE_WRITE - CACHE_READ)


def spent(blocks: Sequence[Block], keep_for_calls: int) -> set[str]:
    """The ids of the ended wakes' recorded evidence among ``blocks`` that a window of a
    new wake leaves out (:func:`carried`): what retrieval may bring again."""
    out: set[str] = set()
    for n, b in enumerate(blocks):
        if is_evidence(b) and not carried(b, islice(blocks, n + 1, None), None, keep_for_calls):
            out.add(b.id)
    return out


def _holding(facts: Sequence[Facts]) -> Iterable[bool]:
    return map(is_not, map(_HOLDS, facts), repeat(None))


def not_carried(
    snap: Sequence[Facts],
    current_wake: str | None,
    keep_for_calls: int,
    marks: Positions | None = None,
) -> list[int]:
    """The indexes of the recorded evidence among ``snap`` that this window leaves out
    (:func:`carried`), found at C speed; each ended wake's is judged once (memoised on its
    facts). ``marks`` (on ``snap``) only saves work."""
    out: list[int] = []
    if keep_for_calls <= 0:
        return out
    at = marks.of("holds", _holding) if marks is not None else None
    for n in compress(range(len(snap)), _holding(snap)) if at is None else at:
        f = snap[n]
        if f.wake is not None and f.wake == current_wake:
            continue
        memo = f.spent
        if memo is None or memo[0] != keep_for_calls:
            following = (g.block for g in islice(snap, n + 1, None))
            keep = carried(f.block, following, current_wake, keep_for_calls)
            memo = f.spent = (keep_for_calls, keep)
        if not memo[1]:
            out.append(n)
    return out


def held_by_evidence(
    snap: Sequence[Facts],
    current_wake: str | None = None,
    keep_for_calls: int = 0,
    marks: Positions | None = None,
) -> list[int]:
    """The indexes of the blocks the recorded evidence among ``snap`` holds, ascending
    (what the pipeline leaves out), found at C speed on the facts. Evidence this window
    leaves out (:func:`not_carried`) holds nothing: what it held may come back. ``marks``
    (on ``snap``) only saves work."""
    if marks is not None:
        holders = [snap[n] for n in marks.of("holds", _holding)]
    else:
        holders = list(compress(snap, _holding(snap)))
    if not holders:
        return []
    dropped = not_carried(snap, current_wake, keep_for_calls, marks)
    if dropped:
        gone = {snap[n] for n in dropped}
        holders = [f for f in holders if f not in gone]
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


def leave_out_spent(work: Work) -> None:
    """Exclude the ended wakes' recorded evidence this window does not carry (judged on
    the snapshot by :func:`held_by_evidence`, memoised on the facts), each with its row:
    what it was and why it stays out."""
    keep_for_calls = work.policy.retrieval.keep_for_calls
    if keep_for_calls <= 0:
        return
    current = work.snapshot.current_wake_id
    marks: Positions = work.part.positions
    # The holders are found where the pipeline found them, on the snapshot's facts (none
    # of them is left out or derived on the way to the partition's).
    snap = marks.snap or ()
    for f in map(snap.__getitem__, marks.of("holds", _holding)):
        memo = f.spent
        if memo is None or memo[1] or f.wake == current or memo[0] != keep_for_calls:
            continue
        work.exclude(
            f,
            Exclusion(
                "evidence_spent",
                "retrieval.keep_for_calls",
                f"evidence of ended wake {f.wake}: reading its {f.tokens} tokens on "
                f"{keep_for_calls} later calls costs more than rewriting what followed it; "
                "retrieval may bring what it held again",
            ),
        )
