"""Facts are found again for equal blocks — and only for blocks that render the same."""

from __future__ import annotations

from datetime import timedelta, timezone

from wakeful.compiler import Block, BlockKind, EstimatingCounter, WindowPolicy
from wakeful.compiler.lookup import FactsTable

from .factory import NOW, block, snapshot
from .helpers import compile_
from .test_common_ends import common_ends
from .test_tokens import Tally

RANKING = WindowPolicy.default().ranking


def facts_for(table: FactsTable, *blocks: Block) -> list[object]:
    return list(table.facts_of(tuple(blocks), {}, EstimatingCounter(), RANKING))


def test_an_equal_new_block_gets_the_facts_of_the_old_one() -> None:
    table = FactsTable(1000)
    old = block("m", BlockKind.MEMORY, "db-2 disks are 2 TB", seq=3, relevance=0.5)
    again = Block.model_validate(old.model_dump())  # what loading the row again gives
    assert again is not old
    (first,) = facts_for(table, old)
    assert facts_for(table, again) == [first]
    changed = again.model_copy(update={"relevance": 0.6})
    assert facts_for(table, changed)[0] is not first


def test_equal_values_that_render_differently_get_their_own_facts() -> None:
    table = FactsTable(1000)
    call = block("c", BlockKind.TOOL_CALL, "", tool_call_id="c", tool_input={"n": 1})
    (first,) = facts_for(table, call)
    for spelled in ({"n": 1.0}, {"n": True}):
        other = call.model_copy(update={"tool_input": spelled})
        assert other == call  # pydantic, like Python, says equal ...
        assert facts_for(table, other)[0] is not first  # ... but "1.0" is not "1"
    at = NOW - timedelta(hours=1)
    dated = block("s", BlockKind.MEMORY, "x", stale_after=at)
    (utc,) = facts_for(table, dated)
    elsewhere = dated.model_copy(
        update={"stale_after": at.astimezone(timezone(timedelta(hours=2)))}
    )
    assert elsewhere == dated and facts_for(table, elsewhere)[0] is not utc


def test_a_grown_history_does_not_reuse_facts_of_a_block_that_renders_differently() -> None:
    """A grown snapshot is matched to the last one from both ends by ``==`` in C; a block
    in either stretch that is another object, equal but spelled differently, still gets
    facts of its own (and the blocks around it keep theirs)."""
    calls = [
        block(f"c{n}", BlockKind.TOOL_CALL, "", seq=n, tool_call_id=f"c{n}", tool_input={"n": n})
        for n in range(12)
    ]
    later = block("late", BlockKind.MEMORY, "one more", seq=99)
    for at in (2, 10):  # in the leading stretch; in the trailing one (after the insert)
        table = FactsTable(1000)
        facts_for(table, *calls)
        first = facts_for(table, *calls)  # the same objects again: remembered as the last
        assert table.last is not None
        spelled = calls[at].model_copy(update={"tool_input": {"n": float(at)}})
        assert spelled == calls[at]
        edited = [*calls[:at], spelled, *calls[at + 1 :]]
        grown = [*edited[:6], later, *edited[6:]]
        got = facts_for(table, *grown)
        assert got[at + (at >= 6)] is not first[at]
        kept = [f for n, f in enumerate(got) if n not in (6, at + (at >= 6))]
        assert kept == [f for n, f in enumerate(first) if n != at]


def test_new_block_objects_are_not_counted_again() -> None:
    tally = Tally()
    from wakeful.compiler import CountingCache

    cache = CountingCache()
    snap = snapshot()
    first = compile_(snap, counter=tally, cache=cache)
    counted = len(tally.seen)
    reloaded = snap.model_copy(
        update={"blocks": tuple(Block.model_validate(b.model_dump()) for b in snap.blocks)}
    )
    again = compile_(reloaded, counter=tally, cache=cache)
    assert len(tally.seen) == counted
    assert again.request_json == first.request_json
    assert again.request_json == compile_(reloaded).request_json


def test_common_ends_compares_by_identity() -> None:
    a, b, c, d = object(), object(), object(), object()
    assert common_ends([a, b, c], [a, b, c]) == (3, 0)
    assert common_ends([a, d, b, c], [a, b, c]) == (1, 2)  # one inserted
    assert common_ends([a, c], [a, b, c]) == (1, 1)  # one removed
    assert common_ends([d], [a, b]) == (0, 0)
    assert common_ends([], [a]) == (0, 0)
