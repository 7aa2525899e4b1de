"""Pass 3 — dedupe: one copy of each content, one holder of each supersession key.

*Exact duplicates* (same text; events excluded, since two identical turns are two events)
keep the copy in the most stable segment — it is already cached there — then the
load-bearing, authoritative, freshest one. Equality of the text is what a content hash
stands for, and dict lookup on the text gives it without a collision risk. *Supersession*:
blocks sharing a ``supersession_key`` describe the same thing; the freshest authoritative
one wins (``authoritative`` first, then ``captured_at``, ``seq``, ``id``). The current wake
is never evicted, and a load-bearing block only yields to another load-bearing block. Every
skip is a ledger row naming the winner.

*Order*: dedupe never edits a block that precedes new content. Copies in an earlier segment
win exact duplicates (they sit earlier in the window), and the current wake, which comes
last, is never compared with the blocks before it: an evidence block whose text the wake
repeats (the model's reply quoting a retrieved turn) stays as the wake's first call sent
it, so the provider's cache of that call still serves the next one. The ledger names the
rule on such a kept block (:data:`PREFIX_RULE`, :func:`later_copies`).

Each text and each key is a group decided from its members alone, so the partition redoes
only the groups a new snapshot touched. The one exception: excluding half of a tool pair
excludes the other half too, and if that half belongs to another key group the order in
which groups are decided shows in the ledger (which reason it gets). Groups with tool
traffic among their members are therefore decided together, in snapshot order
(:func:`tangled_groups`).
"""

from __future__ import annotations

from wakeful.compiler.blocks import SEGMENT_ORDER
from wakeful.compiler.facts import LOAD_BEARING, SUPERSEDES, Exclusion, Facts
from wakeful.compiler.state import Partition
from wakeful.compiler.work import Work

_SEGMENT_RANK = {seg: -n for n, seg in enumerate(SEGMENT_ORDER)}

# The ledger's name for "kept although a later block repeats it".
PREFIX_RULE = "dedupe.prefix_stable"


def later_copies(work: Work) -> dict[str, str]:
    """Texts of the current wake -> the first of its blocks with that text: a block placed
    before the wake with one of these texts is kept, and its ledger row says so."""
    out: dict[str, str] = {}
    for f in work.tail:
        out.setdefault(f.block.text, f.id)
    return out


def kept_detail(copy: str) -> str:
    return f"kept: {copy} repeats it later in the window ({PREFIX_RULE})"


def content_rank(part: Partition, f: Facts) -> tuple[int, bool, bool, float, int, str, int]:
    b = f.block
    return (
        _SEGMENT_RANK[f.segment],
        b.load_bearing,
        b.authoritative,
        f.ts,
        f.seq,
        f.id,
        -part.tb[f],
    )


def freshness_rank(part: Partition, f: Facts) -> tuple[bool, bool, float, int, str, int]:
    b = f.block
    return (b.load_bearing, b.authoritative, f.ts, f.seq, f.id, -part.tb[f])


def _basis(winner: Facts, loser: Facts) -> str:
    """Why ``winner`` is the copy kept, for the loser's ledger row."""
    if winner.segment is not loser.segment:
        return f"the copy earlier in the window, in {winner.segment.value}"
    w, b = winner.block, loser.block
    if w.load_bearing != b.load_bearing:
        return "the load-bearing copy"
    if w.authoritative != b.authoritative:
        return "the authoritative copy"
    if (winner.ts, winner.seq) != (loser.ts, loser.seq):
        return "the fresher copy"
    return "the same age, first by id"


def text_group(part: Partition, text: str) -> None:
    """Exclude every copy of ``text`` but the best one."""
    members = part.texts.get(text, [])
    winner = max(members, key=lambda f: content_rank(part, f)) if len(members) > 1 else None
    for f in members:
        old = part.dd.get(f)
        if f is winner or winner is None:
            if old is None:
                continue
            del part.dd[f]
        else:
            detail = f"duplicate of {winner.id}, {_basis(winner, f)}"
            why = Exclusion("duplicate", "dedupe.content", detail)
            if old == why:
                continue
            part.dd[f] = why
        part.touch(f)
        if f.flags & SUPERSEDES:
            part.dirty_keys[f.block.supersession_key] = None  # type: ignore[index]


def eligible(part: Partition, key: str) -> list[Facts]:
    """Members of a key group still in play after select and content dedupe."""
    return [f for f in part.keys.get(key, []) if f not in part.sel and f not in part.dd]


def _losers(part: Partition, key: str, members: list[Facts]) -> list[tuple[Facts, Exclusion]]:
    if len(members) < 2:
        return []
    winner = max(members, key=lambda f: freshness_rank(part, f))
    champion = winner.block
    why = Exclusion("superseded", "dedupe.supersession", f"{key}: superseded by {champion.id}")
    out = []
    for f in members:
        if f is winner or f in part.tail:
            continue
        if f.flags & LOAD_BEARING and not champion.load_bearing:
            continue
        out.append((f, why))
    return out


def key_group(part: Partition, key: str) -> None:
    """Decide one supersession key, unless tool traffic ties it to other groups."""
    members = eligible(part, key)
    tangled = any(f in part.partner for f in members)
    if tangled or key in part.tangled:
        part.tangled_dirty = True
        if tangled:
            part.tangled[key] = None
        else:
            del part.tangled[key]
    old = {f: part.sup.pop(f) for f in part.keys.get(key, []) if f in part.sup}
    if tangled:
        new: dict[Facts, Exclusion] = {}
    else:
        new = dict(_losers(part, key, members))
        part.sup.update(new)
    for f in old.keys() | new.keys():
        if old.get(f) != new.get(f):
            part.touch(f)


def tangled_groups(part: Partition) -> None:
    """Decide the groups with tool traffic together, in snapshot order, with cascades."""
    pos = part.position()
    groups = []
    for key in part.tangled:
        members = sorted(eligible(part, key), key=pos.__getitem__)
        if members:
            groups.append((pos[members[0]], key, members))
    groups.sort()
    new: dict[Facts, Exclusion] = {}

    def out(f: Facts) -> bool:
        return f in new or f in part.e0 or f in part.sel or f in part.dd or f in part.sup

    for _, key, members in groups:
        for f, why in _losers(part, key, members):
            if out(f):
                continue
            new[f] = why
            other = part.partner.get(f)
            if other is not None and not out(other):
                detail = f"pair of {f.id}: {why.detail}".rstrip(": ")
                new[other] = Exclusion(why.reason, why.rule, detail)
    old = part.sup_t
    part.sup_t = new
    for f in old.keys() | new.keys():
        if old.get(f) != new.get(f):
            part.touch(f)
