"""Derive's lists for facts edited in one stretch, spliced from the last compile's.

``pipeline.derive`` puts derived facts in place of the tool results the clearing pass
clears (``clearing.py``), then of those live output settles (``live_output.py``). Each
pass answers with positions, and from one compile to the next the answers are much the
same: a history grown by an event clears and settles what it did before. When the facts
are the last ones edited in one stretch (``FactsTable.edit``), each list is the last
compile's with that stretch made anew and the few positions whose answer changed put in,
instead of a copy of the facts patched at every cleared and settled result. The partition
is then told where the output changed (``membership.one_edit``) instead of finding it.

What it relies on: the facts outside the stretch are the very objects they were (the
lookup's edit), and in the last list they carry what the last answer made of them (the
answers are compared position by position, the tail's shifted by the edit); a derived
fact is made once per source and derivation (``FactsTable.derived``). Anything else takes
the general path, which gives the same list.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from operator import itemgetter

from wakeful.compiler.facts import Derivation
from wakeful.compiler.lookup import shared_prefix
from wakeful.compiler.positions import Edit
from wakeful.compiler.work import Facts

Answer = list[tuple[int, Derivation]]  # positions in order, each with its derivation
Shape = tuple[int, int, int, int]  # head, tail, new length, old length (see below)
_AT = itemgetter(0)
_MAX_CHANGED = 64  # answer entries changed outside the stretch; past this, the general path


def changed_outside(new: Answer, old: Answer, shape: Shape) -> list[int] | None:
    """The positions (in the new facts) outside the edited stretch where ``new`` and
    ``old`` differ: an entry added, dropped or with another derivation, in order.
    ``shape`` is (head, tail, new length, old length): the first ``head`` positions hold
    the same facts, and so do the last ``tail``, shifted by the difference in length.
    None when more than a few differ."""
    head, tail, n_new, n_old = shape
    changed: list[int] = []
    a_new, a_old = bisect_left(new, head, key=_AT), bisect_left(old, head, key=_AT)
    same = shared_prefix(new, old, min(a_new, a_old))
    if a_new - same + a_old - same > _MAX_CHANGED:
        return None
    _merge(new[same:a_new], old[same:a_old], 0, changed)
    b_new = bisect_left(new, n_new - tail, key=_AT)
    b_old = bisect_left(old, n_old - tail, key=_AT)
    if len(new) - b_new + len(old) - b_old > _MAX_CHANGED:
        return None
    _merge(new[b_new:], old[b_old:], n_new - n_old, changed)
    return changed


def _merge(new: Answer, old: Answer, shift: int, changed: list[int]) -> None:
    """Walk two answers in position order (``old``'s positions shifted by ``shift``),
    noting where they differ."""
    i = j = 0
    while i < len(new) or j < len(old):
        p = new[i][0] if i < len(new) else -1
        q = old[j][0] + shift if j < len(old) else -1
        if j == len(old) or (i < len(new) and p < q):
            changed.append(p)
            i += 1
        elif i == len(new) or q < p:
            changed.append(q)
            j += 1
        else:
            if new[i][1] != old[j][1]:
                changed.append(p)
            i += 1
            j += 1


def spliced(
    last: list[Facts],
    facts: list[Facts],
    edit: Edit,
    answer: Answer,
    changed: list[int],
    derive: Callable[[list[Facts], list[Derivation]], list[Facts]],
) -> tuple[list[Facts], int]:
    """``facts`` with ``answer`` in place, made from ``last`` (the last facts with the last
    answer in place, ``edit`` from them): its head and tail as they were, the edited
    stretch and the ``changed`` positions made anew. Returns the list and how many facts
    were put in other than by copying ``last``."""
    _, head, tail = edit
    end = len(facts) - tail
    out = last[:head]  # one copy of the history: the rest is appended to it
    out += facts[head:end]
    out += last[len(last) - tail :]
    mid = answer[bisect_left(answer, head, key=_AT) : bisect_left(answer, end, key=_AT)]
    at, how = [p for p, _ in mid], [d for _, d in mid]
    for p in changed:
        k = bisect_left(answer, p, key=_AT)
        if k < len(answer) and answer[k][0] == p:
            at.append(p)
            how.append(answer[k][1])
        else:
            out[p] = facts[p]  # no entry now: the fact as it is
    if at:
        list(map(out.__setitem__, at, derive(list(map(facts.__getitem__, at)), how)))
    return out, end - head + len(changed)


def shared_ends(
    last: list[Facts], length: int, shape: Shape, left_out: list[int], changed: list[int]
) -> Edit:
    """How an output of ``length`` facts was edited from ``last``: the facts it shares at
    the start and at the end, given the edited stretch of the facts it was made from
    (``shape``), the positions ``changed`` besides (both before leaving out ``left_out``,
    which all lie before the stretch)."""
    head, tail, n_new, _ = shape
    first, end = head, n_new - tail
    for p in changed:
        if p < head:
            first = min(first, p)
        else:
            end = max(end, p + 1)
    first -= bisect_left(left_out, first)
    return last, first, length - (end - len(left_out))
