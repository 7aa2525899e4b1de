"""Evidence admission: a retrieved hit enters the window only when it is worth its tokens.

Retrieval proposes up to ``retrieval.max_tokens`` of hits; every token of them admitted is
sent after the cached prefix (the wake's content), written to the cache by the wake's next
call and read by the later ones (and by later wakes while the wake's evidence is carried,
``evidence.py``). A hit's expected
value is the chance that it answers the ask, which follows what it shares with the ask
(``overlap.py``: fused retrieval scores are flat and say little), and how much the ask
reaches for the past at all:

* an ask that asks something (a question) may bring ``retrieval.max_tokens``, hits that
  share at least ``retrieval.min_overlap`` of its content words;
* an ask that asks nothing (a statement: most turns of a conversation) brings at most
  ``retrieval.statement_max_tokens``, hits that share ``retrieval.statement_min_overlap``.

Only retrieval's own hits are judged here (those with a packing rank). A hit retrieval
brought as a neighbour (the turn before or after a hit) follows its hit: in when its hit
is, and within the same cap. The floors and caps are measured on the dev split's
conversations, each fold tuned on the others (``benchmarks/evidence_calibration.py``).
Every hit gets a ledger row saying why it came or stayed out, where it went and what it
costs.

Cost: the hits of one wake's first call, never the history (found at C speed on the facts).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from operator import attrgetter, eq

from wakeful.compiler.overlap import is_question, overlap, terms
from wakeful.compiler.work import Exclusion, Facts, Work

__all__ = ["admit_evidence"]

_KIND = attrgetter("kind_s")


# Retrieval's hits carry their packing rank (``RetrievalHit.to_block``); a ``retrieved``
# block without it (an agent's own query source) is the budget's alone, as before.
RANK_META = "rank"
_RULE_FLOOR = "retrieval.min_overlap"
_RULE_CAP = "retrieval.max_tokens"


def _ranked_hits(facts: Sequence[Facts]) -> list[bool]:
    """Which facts are retrieval's ranked hits. Asked of the whole snapshot once and then
    of each edited stretch (positions.py), so a history full of older retrieved turns
    costs nothing per compile: only the hits that carry a rank are kept as positions."""
    retrieved = map(eq, map(_KIND, facts), repeat("retrieved"))
    return [r and RANK_META in f.block.meta for r, f in zip(retrieved, facts, strict=True)]


PLACED = "after the cached prefix (the wake's content), recorded with the wake"


def admit_evidence(work: Work) -> None:
    """Exclude the retrieved hits not worth their tokens in this window; note on the
    others why they came (``Work.notes``, the ledger's detail)."""
    # Found where the pipeline keeps them, on the snapshot's facts (positions.py): a
    # retrieved block is never derived, and one left out is not in the partition.
    marks = work.part.positions
    snap, present = marks.snap or (), work.part.present
    hits = [
        f
        for f in map(snap.__getitem__, marks.of(("kind", "retrieved", RANK_META), _ranked_hits))
        if f in present and not work.is_excluded(f)
    ]
    if not hits:
        return
    spec = work.policy.retrieval
    text = work.goal.text
    asks = is_question(text)
    if asks:
        floor, cap, what = spec.min_overlap, spec.max_tokens, "a question"
        floor_rule, cap_rule = _RULE_FLOOR, _RULE_CAP
    else:
        floor, cap, what = spec.statement_min_overlap, spec.statement_max_tokens, "a statement"
        floor_rule, cap_rule = "retrieval.statement_min_overlap", "retrieval.statement_max_tokens"
    ask = terms(text)
    # Packing order: retrieval's relevance falls along it (``indexing.retrieved_blocks``).
    hits.sort(key=lambda f: (-f.block.relevance, f.seq, f.id))
    admitted: set[str] = set()
    used = 0
    for f in hits:
        meta = f.block.meta
        parent = meta.get("neighbour_of")
        if parent is not None:
            if f"retrieved:{parent}" not in admitted:
                work.exclude(
                    f,
                    Exclusion(
                        "not_worth_its_tokens",
                        floor_rule,
                        f"neighbour of {parent}, which is not admitted ({f.tokens} tokens saved)",
                    ),
                )
                continue
            share = None
        else:
            share = overlap(ask, f.block.text)
            if share < floor or not ask:
                work.exclude(
                    f,
                    Exclusion(
                        "not_worth_its_tokens",
                        floor_rule,
                        f"shares {share:.2f} of the words of {what} < {floor:g} "
                        f"({f.tokens} tokens saved)",
                    ),
                )
                continue
        if used + f.tokens > cap:
            work.exclude(
                f,
                Exclusion(
                    "not_worth_its_tokens",
                    cap_rule,
                    f"{used} tokens of evidence admitted for {what}; {f.tokens} more "
                    f"would pass {cap}",
                ),
            )
            continue
        used += f.tokens
        admitted.add(f.id)
        why = (
            f"shares {share:.2f} of the words of {what} (>= {floor:g})"
            if share is not None
            else f"neighbour of {parent}"
        )
        work.notes[f] = (
            f"{why}; {PLACED}; {f.tokens} tokens as input, cached by the wake's next call"
        )
