"""Finding each block's :class:`~wakeful.compiler.facts.Facts` again, compile after compile.

A worker builds new :class:`Block` objects for every compile (it loads rows), so facts are
keyed by block id and reused only when the new block is *equal by value* to the one they
were made from: every field compared (``__dict__`` equality), plus the spelling of the
fields whose ``==`` is looser than the bytes they render to (``work.strict_key``). A block that
is the very object seen before skips even that. Whole lists are matched at C speed (``map``
over ``operator`` functions); only blocks that are new or changed reach Python-level code.

Synthetic blocks (agent instructions, trigger rules, the synthetic ask) have their own
table, because a snapshot may legitimately use the same ids.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from itertools import compress, count, repeat
from operator import attrgetter, eq, is_, is_not, itemgetter, not_
from typing import Any

from wakeful.compiler.blocks import Block
from wakeful.compiler.facts import Derivation, Facts, derive_block, make_facts, strict_key
from wakeful.compiler.policy import Ranking
from wakeful.compiler.tokens import TokenCounter, WorkCounts

_ID = itemgetter("id")
_DICT = attrgetter("__dict__")
_FIELDS = attrgetter("fields")
_STRICT = attrgetter("strict")
_MAX_SYNTHETIC = 1024
_FIRST = itemgetter(0)
_SECOND = itemgetter(1)
_NOT_DERIVED = (None, None)
_STRETCH = 512  # items compared per slice by shared_prefix


class _Miss:
    """Stands in for absent facts so that whole-list comparisons need no branches."""

    __slots__ = ("fields", "strict")

    def __init__(self) -> None:
        self.fields: dict[str, Any] = {}  # equals no block's fields
        self.strict = None


_MISS: Any = _Miss()


def shared_prefix(a: Sequence[Any], b: Sequence[Any], n: int) -> int:
    """How many leading items ``a`` and ``b`` share by ``==`` (at most ``n``), found by
    list equality, in C and far faster than an iterator chain: stretch by stretch, each
    item sliced once (a slice touches every item it holds, so halving the whole list
    would read the history several times over), then the first difference in the stretch
    that differs. (Facts have no ``==`` of their own: for them it is identity.)"""
    lo = 0
    while lo < n:
        hi = min(lo + _STRETCH, n)
        if a[lo:hi] != b[lo:hi]:
            return _first_difference(a, b, lo, hi)
        lo = hi
    return n


def _first_difference(a: Sequence[Any], b: Sequence[Any], lo: int, hi: int) -> int:
    """The first index in ``lo:hi`` where ``a`` and ``b`` differ by ``==``, which is known
    to exist. Identical items are passed in C: ``operator.ne`` has no identity shortcut,
    and a model's ``!=`` is Python code."""
    while True:
        at = lo + next(compress(count(), map(is_not, a[lo:hi], b[lo:hi])))
        if a[at] != b[at]:
            return at
        lo = at + 1


def common_facts_ends(a: list[Facts], b: list[Facts]) -> tuple[int, int]:
    """How many leading and trailing facts ``a`` and ``b`` share (by identity: facts have
    no ``==`` of their own); the two never overlap in the shorter list."""
    n = min(len(a), len(b))
    head = shared_prefix(a, b, n)
    m = n - head  # the tail lies within the last m of each
    tail = shared_prefix(a[len(a) - m :][::-1], b[len(b) - m :][::-1], m) if m else 0
    return head, tail


def common_block_ends(
    blocks: tuple[Block, ...], old: tuple[Block, ...], facts: list[Facts], strict: list[int]
) -> tuple[int, int]:
    """How many leading and trailing blocks of ``blocks`` have the facts ``facts`` that
    ``old`` had at the same place (the two never overlap in the shorter sequence).

    Found by list equality (:func:`shared_prefix`), which passes over the very same object
    at C speed without reading it, where an identity scan calls a function per block. A
    block that is another object but ``==`` passes too: it has the same fields, as the
    value match requires (``FactsTable._match``). What ``==`` does not see is checked
    where it can matter: at ``strict``, the places whose facts have a strict key (``1``
    vs ``1.0``), a block that is another object must have the same key.
    """
    n = min(len(blocks), len(old))
    head = shared_prefix(blocks, old, n)
    m = n - head  # the tail lies within the last m of each
    tail = shared_prefix(blocks[len(blocks) - m :][::-1], old[len(old) - m :][::-1], m) if m else 0
    if strict:
        shift = len(blocks) - len(old)
        # Of the places in doubt, only those holding another object: found in C.
        doubt = strict[: bisect_left(strict, head)]
        for p in compress(
            doubt, map(is_not, map(blocks.__getitem__, doubt), map(old.__getitem__, doubt))
        ):
            if strict_key(blocks[p]) != facts[p].strict:
                head = p
                break
        # The trailing stretch, nearest its end first (it is short when a history grows).
        for p in reversed(strict[bisect_left(strict, len(old) - tail) :]):
            block = blocks[p + shift]
            if block is not old[p] and strict_key(block) != facts[p].strict:
                tail = len(old) - p - 1
                break
    return head, tail


def _spliced_strict(
    strict: list[int], head: int, middle: list[Facts], rest: int, shift: int
) -> list[int]:
    """``strict`` for a list edited in one place: the places before ``head`` kept, those
    of ``middle`` added, those from ``rest`` on (the old list's tail) moved by ``shift``."""
    out = strict[: bisect_left(strict, head)]
    out += [head + k for k, f in enumerate(middle) if f.strict is not None]
    out += [p + shift for p in strict[bisect_left(strict, rest) :]]
    return out


class FactsTable:
    """The facts of one cache namespace: by object (holding it alive), by id, synthetic.

    ``partitions`` holds each agent's :class:`~wakeful.compiler.state.Partition`
    (typed loosely to keep this module below it).
    """

    __slots__ = (
        "by_id",
        "by_obj",
        "derivations",
        "edit",
        "last",
        "last_strict",
        "max_entries",
        "partitions",
        "returned",
        "synth",
        "work",
    )

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self.by_obj: dict[int, Facts] = {}
        self.by_id: dict[str, Facts] = {}
        self.synth: dict[str, Facts] = {}
        # (id of the source facts, derivation) -> (source facts, derived facts): the source
        # is held, so the id is its own while the entry lives.
        self.derivations: dict[tuple[int, Derivation], tuple[Facts, Facts]] = {}
        self.last: tuple[tuple[Block, ...], list[Facts]] | None = None
        # Where in ``last`` the facts have a strict key (``common_block_ends``), ascending.
        self.last_strict: list[int] = []
        # How the list the last ``facts_of`` returned was edited from the one before it
        # (``positions.Edit``), when it was: the passes' positions then carry over.
        self.edit: tuple[list[Facts], int, int] | None = None
        self.returned: list[Facts] | None = None  # what the last ``facts_of`` returned
        self.partitions: dict[tuple[str, str], Any] = {}
        self.work = WorkCounts()  # the cache's own counts once a compile hands them in

    def _store(self, f: Facts) -> None:
        old = self.by_id.get(f.id)
        if old is not None:
            self.by_obj.pop(id(old.block), None)
        self.by_id[f.id] = f
        # The entry holds its block, so no other live object can have that id(): an id()
        # hit is an identity hit.
        self.by_obj[id(f.block)] = f

    def facts_of(
        self,
        blocks: tuple[Block, ...],
        counts: dict[str, int],
        counter: TokenCounter,
        ranking: Ranking,
    ) -> list[Facts]:
        """Facts for every block, in order, reusing those of equal blocks seen before.

        The returned list may be shared with later calls: treat it as read-only.
        """
        last = self.last
        self.edit = None
        if last is not None:
            if last[0] is blocks:
                self.returned = last[1]
                return last[1]
            old_blocks, old = last
            head = tail = 0
            # Only when an end is the very same object: newly built blocks would all be
            # compared by value here, one Python ``==`` each, where ``_match`` does it in C.
            if (
                blocks
                and old_blocks
                and (blocks[0] is old_blocks[0] or blocks[-1] is old_blocks[-1])
            ):
                head, tail = common_block_ends(blocks, old_blocks, old, self.last_strict)
            if head + tail > len(blocks) // 2:  # the same history, edited in one place
                middle = self._known(blocks[head : len(blocks) - tail], counts, counter, ranking)
                out = old[:head]  # one copy of the history: the rest is appended to it
                out += middle
                out += old[len(old) - tail :]
                self.last = (blocks, out)
                self.last_strict = _spliced_strict(
                    self.last_strict,
                    head,
                    middle,
                    len(old) - tail,
                    len(middle) - (len(old) - tail - head),
                )
                self.edit, self.returned = (old, head, tail), out
                return out
        by_obj = self.by_obj
        if blocks and by_obj.get(id(blocks[0])) is None and by_obj.get(id(blocks[-1])) is None:
            # New objects (a worker loads rows for every compile): match by id and value.
            # They are not remembered as ``last``: holding them would only move the cost of
            # freeing them into the next compile.
            out = self._match(blocks, counts, counter, ranking)
        else:
            out = self._known(blocks, counts, counter, ranking)
            self.last = (blocks, out)
            self.last_strict = list(
                compress(range(len(out)), map(is_not, map(_STRICT, out), repeat(None)))
            )
        # Most of the facts are those returned last time, edited in one place.
        before = self.returned
        if before is not None:
            head, tail = common_facts_ends(out, before)
            if head + tail > len(out) // 2:
                self.edit = (before, head, tail)
        self.returned = out
        return out

    def _known(
        self,
        blocks: Sequence[Block],
        counts: dict[str, int],
        counter: TokenCounter,
        ranking: Ranking,
    ) -> list[Facts]:
        """Facts of blocks that are mostly objects seen before."""
        out: list[Any] = list(map(self.by_obj.get, map(id, blocks)))
        missing = list(compress(range(len(blocks)), map(is_, out, repeat(None))))
        if missing:
            found = self._match([blocks[i] for i in missing], counts, counter, ranking)
            for i, f in zip(missing, found, strict=True):
                out[i] = f
        return out

    def _match(
        self,
        blocks: Sequence[Block],
        counts: dict[str, int],
        counter: TokenCounter,
        ranking: Ranking,
    ) -> list[Facts]:
        """Facts of blocks not seen as objects: by id, if equal in value; else new."""
        n = len(blocks)
        if len(self.by_id) + n > self.max_entries:
            self.by_id.clear()
            self.by_obj.clear()
        fields = list(map(_DICT, blocks))
        found: list[Any] = list(map(self.by_id.get, map(_ID, fields), repeat(_MISS)))
        same = list(map(eq, map(_FIELDS, found), fields))
        # Equal values may still render differently (1 vs 1.0): compare the strict keys of
        # the blocks whose facts say they have such fields at all.
        for k in compress(range(n), map(is_not, map(_STRICT, found), repeat(None))):
            if same[k] and strict_key(blocks[k]) != found[k].strict:
                same[k] = False
        for k in compress(range(n), map(not_, same)):
            f = make_facts(blocks[k], counts, counter, ranking)
            self.work.facts_made += 1
            self._store(f)
            found[k] = f
        return found

    def derived(
        self,
        source: Facts,
        derivation: Derivation,
        counts: dict[str, int],
        counter: TokenCounter,
        ranking: Ranking,
    ) -> Facts:
        """Facts of the block a pass derives from ``source`` (``facts.derive_block``),
        made once per source and derivation: a pass that derives the same block again
        every compile hands the partition the same facts, which it then leaves alone."""
        key = (id(source), derivation)
        held = self.derivations.get(key)
        if held is not None and held[0] is source:
            return held[1]
        if len(self.derivations) >= self.max_entries:
            self.derivations.clear()
        f = make_facts(derive_block(source.block, derivation), counts, counter, ranking)
        self.work.facts_made += 1
        self.work.blocks_derived += 1
        self.derivations[key] = (source, f)
        return f

    def derived_all(
        self,
        sources: list[Facts],
        derivations: list[Derivation],
        counts: dict[str, int],
        counter: TokenCounter,
        ranking: Ranking,
    ) -> list[Facts]:
        """:meth:`derived` of each source and derivation; those derived before are found
        at C speed (a history clears many results, the same ones compile after compile)."""
        keys = list(zip(map(id, sources), derivations, strict=True))
        held = list(map(self.derivations.get, keys, repeat(_NOT_DERIVED)))
        out: list[Any] = list(map(_SECOND, held))
        for k in compress(range(len(keys)), map(is_not, map(_FIRST, held), sources)):
            out[k] = self.derived(sources[k], derivations[k], counts, counter, ranking)
        return out

    def synthetic(
        self, block: Block, counts: dict[str, int], counter: TokenCounter, ranking: Ranking
    ) -> Facts:
        """Facts of a block the compiler made itself, reused while its value is unchanged."""
        f = self.synth.get(block.id)
        if f is None or f.block.__dict__ != block.__dict__ or f.strict != strict_key(block):
            if len(self.synth) >= _MAX_SYNTHETIC:
                self.synth.clear()
            f = self.synth[block.id] = make_facts(block, counts, counter, ranking)
            self.work.facts_made += 1
        return f
