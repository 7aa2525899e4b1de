"""Quantized history: the older turns leave the window in steps, not one by one.

A provider caches a prompt by exact prefix. If the history bucket admitted the newest turns
that fit, every new turn would push the oldest one out and shift the start of the history:
every call would rewrite the whole history, as a sliding window does. Instead, when the
history does not fit its share of the budget, it starts at an **anchor**: the first user
turn at or after a multiple of ``quantum`` tokens, counted from the start of the snapshot's
history. The earliest anchor whose suffix fits is the start; it stays put while the history
grows, until the suffix no longer fits and the start jumps one quantum on. Between jumps
the start of history — and so the cached prefix — is byte-identical.

``quantum = input_budget × allocations.recent × budget.history_quantum`` (0 turns this off
and the bucket is filled best-first like the others). Positions count every live candidate
of the history, whatever this compile excludes, so they depend on the snapshot only; the
snapshot's own tail moves in pages for the same reason (``substrate/snapshot.py``).

Cost: the walk reads the history from the newest end and stops one user turn past the
room, so it costs what the window holds, not the length of the history.
"""

from __future__ import annotations

from wakeful.compiler.blocks import BlockKind, Role, Segment
from wakeful.compiler.streams import COST
from wakeful.compiler.work import Facts, Work

__all__ = ["admit_history", "history_quantum"]


def history_quantum(work: Work) -> int:
    spec = work.policy.budget
    return int(spec.input_budget * spec.allocations.recent * spec.history_quantum)


def _turn_start(f: Facts) -> bool:
    block = f.block
    return block.kind is BlockKind.TURN and block.role is Role.USER


def admit_history(work: Work, room: int) -> int | None:
    """Admit the history from its anchor if it must be cut; return the tokens it takes.

    ``None`` when the history fits ``room`` whole, quantization is off, or no anchor's
    suffix fits: the caller then fills the bucket best-first as usual.
    """
    quantum = history_quantum(work)
    part = work.part
    total = part.totals.get(Segment.RECENT, 0)
    if quantum <= 0 or total <= room:
        return None
    entries, recent = part.entries, Segment.RECENT
    suffix = fit = 0
    kept: list[tuple[Facts, int, int]] = []  # (head, its position, fit through it)
    turns: list[int] = []  # indexes into kept of user turns
    previous_turn = -1  # position of the first user turn older than all of kept
    for f in reversed(part.snap):
        if f.segment is not recent:
            continue
        entry = entries.get(f)
        if entry is None:
            continue
        suffix += entry[COST]
        position = total - suffix
        if fit >= 0:
            cost = 0 if work.is_excluded(f) else entry[COST]
            if fit + cost <= room:
                fit += cost
                kept.append((f, position, fit))
                if _turn_start(f):
                    turns.append(len(kept) - 1)
                continue
            fit = -1  # full: look on only for the user turn before the oldest kept one
        if _turn_start(f):
            previous_turn = position
            break
    start = None
    # Oldest kept user turn first: an anchor is the first user turn at or after k·quantum.
    for n, i in enumerate(reversed(turns)):
        position = kept[i][1]
        before = kept[turns[len(turns) - n]][1] if n else previous_turn
        if position // quantum > before // quantum:
            start = i
            break
    if start is None:
        return None
    spent = kept[start][2]
    admitted = work.admitted
    for f, _, _ in kept[: start + 1]:
        if not work.is_excluded(f):
            admitted[f] = "history"
    return spent
