"""An incremental compile does work in proportion to what changed, not to the history.

Counted, not timed: ``CountingCache.work`` counts the facts a compile made (blocks
summarised, cleared and settled copies included) and the partition entries it touched. A
history of 1k or 10k blocks that grows by one event must cost the same small number of
each, on both paths a worker takes: the same block objects again (a retry, the tail cache)
and blocks freshly built from loaded rows. Clearing, live output (stale and repeated
results, results N asks back), the on-demand tool and dedupe are all in play, so a pass
that re-derives the whole history on every compile shows here as counts that grow with it.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from benchmarks.compile_history import reloaded
from wakeful.compiler import (
    Block,
    BlockKind,
    CountingCache,
    EstimatingCounter,
    Role,
    Snapshot,
    compile_window,
    load_policy,
)
from wakeful.compiler.blocks import ON_DEMAND_META

from .factory import AGENT, NOW, WAKE, block, goal, turn

POLICY = load_policy(
    "[eviction]\nclear_tool_output_at = 20000\nclear_tool_output_keep = 4000\n"
    "resolve_repeated_calls = true\nresolve_after_asks = 40\n"
)
# Fixed bounds for one new event: the event itself, a result cleared or settled by the
# move it causes, the blocks of their units and groups.
MAX_FACTS = 8
MAX_TOUCHED = 40
# Facts read per question (about six) for one new event: the event and the ask after it.
MAX_READ = 6 * 4
WAKES = 60  # past wakes enough to move the clearing boundary at both sizes


def _wake(n: int) -> list[Block]:
    """A past wake of eight blocks: an ask, two tool pairs (the second repeats an earlier
    wake's call, one result goes stale), a memory and the reply."""
    wake, seq = f"w-{n}", 10 * n
    out = [turn(f"ask-{n}", seq, text=f"Check run {n}.", wake_id=wake)]
    for k, query in enumerate((f"run {n}", f"run {n // 3}")):
        call_id = f"tc-{n}-{k}"
        out.append(
            block(
                f"call-{n}-{k}",
                BlockKind.TOOL_CALL,
                "",
                seq=seq + 1 + 2 * k,
                role=Role.ASSISTANT,
                tool_call_id=call_id,
                tool_name="read_log",
                tool_input={"q": query},
                wake_id=wake,
            )
        )
        out.append(
            block(
                f"result-{n}-{k}",
                BlockKind.TOOL_RESULT,
                f"log of {query} (call {n}.{k})\n" + "step ok\n" * 40,
                seq=seq + 2 + 2 * k,
                role=Role.USER,
                tool_call_id=call_id,
                tool_name="read_log",
                wake_id=wake,
                stale_after=NOW - timedelta(hours=1) if n % 7 == 0 and k == 0 else None,
            )
        )
    out.append(block(f"mem-{n}", BlockKind.MEMORY, f"run {n} is green", seq=seq + 6, relevance=0.5))
    out.append(turn(f"reply-{n}", seq + 7, Role.ASSISTANT, text=f"Run {n} passed.", wake_id=wake))
    return out


def _history(size: int) -> list[Block]:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    blocks = [
        block("tool:read_log", BlockKind.TOOL_SCHEMA, "Read a log.", tool_name="read_log",
              tool_input=schema),
        block("tool:read_result", BlockKind.TOOL_SCHEMA, "Read a stored result.",
              tool_name="read_result", tool_input=schema, meta={ON_DEMAND_META: "1"}),
    ]  # fmt: skip
    n = 0
    while len(blocks) < size:
        blocks += _wake(n)
        n += 1
    return blocks


def _live(k: int) -> Block:
    return turn(f"live-{k}", 10**9 + k, text=f"live event {k}", wake_id=WAKE)


def _snapshot(blocks: list[Block] | tuple[Block, ...]) -> Snapshot:
    return Snapshot.model_construct(
        agent=AGENT, as_of=NOW, session_id=None, current_wake_id=WAKE, blocks=tuple(blocks)
    )


def incremental_work(size: int, *, fresh: bool) -> tuple[int, int, int]:
    """(facts made, blocks derived, entries touched) by the compile of a ``size``-block
    history grown by one event, after a compile of it without that event."""
    history = _history(size)
    before = [*history, _live(0)]
    after = [*before, _live(1)]
    cache = CountingCache()

    def compile_(blocks: list[Block]) -> object:
        snap = _snapshot(reloaded(blocks) if fresh else blocks)
        return compile_window(snap, goal(), POLICY, NOW, counter=EstimatingCounter(), cache=cache)

    compile_(before)
    start = cache.work.snapshot()
    compile_(after)
    end = cache.work.snapshot()
    return (end[0] - start[0], end[1] - start[1], end[2] - start[2])


def _grown(size: int, count: str, *, fresh: bool, wakes: int = 0) -> int:
    """``count`` of ``CountingCache.work`` for the compile of a ``size``-block history
    grown by one live event or, with ``wakes``, by that many more past wakes, after a
    compile without them."""
    history = _history(size)
    before = [*history, _live(0)]
    after = [*before, _live(1)]
    if wakes:
        after = [*history, *(b for k in range(wakes) for b in _wake(10**6 + k)), _live(0)]
    cache = CountingCache()

    def compile_(blocks: list[Block]) -> None:
        snap = _snapshot(reloaded(blocks) if fresh else blocks)
        compile_window(snap, goal(), POLICY, NOW, counter=EstimatingCounter(), cache=cache)

    compile_(before)
    start = getattr(cache.work, count)
    compile_(after)
    return int(getattr(cache.work, count)) - start


def results_scanned(size: int, *, fresh: bool, wakes: int = 0) -> int:
    """History entries the clearing pass read (while one event does not move the
    boundary, none; more past wakes move it)."""
    return _grown(size, "results_scanned", fresh=fresh, wakes=wakes)


def history_built(size: int, *, fresh: bool, wakes: int = 0) -> int:
    """History entries the clearing pass built or read back through for the grown
    snapshot (its view of the history is extended, not built again)."""
    return _grown(size, "history_built", fresh=fresh, wakes=wakes)


def positions_read(size: int, *, fresh: bool) -> int:
    """Facts read to find the blocks the evidence, live-output, on-demand, oversize and
    admission passes look for, for one event more."""
    return _grown(size, "positions_read", fresh=fresh)


@pytest.mark.parametrize("fresh", [False, True], ids=["same-blocks", "fresh-blocks"])
def test_one_new_event_reads_only_the_edit_to_find_what_passes_look_for(fresh: bool) -> None:
    """Recorded evidence, stale results, on-demand schemas, shortened results and turns
    over their share are found once; one more event reads the stretch that changed."""
    small, large = positions_read(1_000, fresh=fresh), positions_read(10_000, fresh=fresh)
    assert 0 < small <= MAX_READ and 0 < large <= MAX_READ, (small, large)


@pytest.mark.parametrize("fresh", [False, True], ids=["same-blocks", "fresh-blocks"])
def test_one_new_event_does_not_rescan_the_cleared_history(fresh: bool) -> None:
    """Finding the cleared results reads the history up to the clearing boundary; while
    one event does not move the boundary, that is not redone."""
    assert results_scanned(1_000, fresh=fresh) == 0
    assert results_scanned(10_000, fresh=fresh) == 0


@pytest.mark.parametrize("fresh", [False, True], ids=["same-blocks", "fresh-blocks"])
def test_the_clearing_pass_builds_only_the_history_that_changed(fresh: bool) -> None:
    """The clearing pass keeps its view of the history (entries, their wakes and token
    positions) between compiles: one live event adds no history entry, more past wakes
    add theirs, and neither builds or reads back through the history kept."""
    assert history_built(1_000, fresh=fresh) == history_built(10_000, fresh=fresh) == 0
    small = history_built(1_000, fresh=fresh, wakes=WAKES)
    large = history_built(10_000, fresh=fresh, wakes=WAKES)
    assert 0 < small <= WAKES * 8 and 0 < large <= WAKES * 8, (small, large)


@pytest.mark.parametrize("fresh", [False, True], ids=["same-blocks", "fresh-blocks"])
def test_a_moved_boundary_reads_only_the_newly_cleared_history(fresh: bool) -> None:
    """More past wakes move the clearing boundary: the pass reads the entries between the
    old boundary and the new one (no more than were added), not the history before it."""
    small = results_scanned(1_000, fresh=fresh, wakes=WAKES)
    large = results_scanned(10_000, fresh=fresh, wakes=WAKES)
    assert 0 < small <= WAKES * 8 and 0 < large <= WAKES * 8, (small, large)


@pytest.mark.parametrize("fresh", [False, True], ids=["same-blocks", "fresh-blocks"])
def test_one_new_event_costs_a_bounded_amount_at_1k_and_10k_blocks(fresh: bool) -> None:
    for size in (1_000, 10_000):
        made, _, touched = counts = incremental_work(size, fresh=fresh)
        assert made <= MAX_FACTS and touched <= MAX_TOUCHED, (
            f"one new event on {size} blocks made {made} facts and touched {touched}"
            f" partition entries (facts made, derived, touched: {counts})"
        )


def test_the_history_exercises_clearing_and_live_output() -> None:
    """The counted history really has cleared, stale, repeated and old results (else the
    bounds above would say nothing about those passes)."""
    blocks = [*_history(1_000), _live(0)]
    window = compile_window(
        _snapshot(blocks), goal(), POLICY, NOW, counter=EstimatingCounter(), cache=CountingCache()
    )
    rules = {row.rule for row in window.ledger.rows}
    assert {
        "eviction.clear_tool_output",
        "tool.fresh_for",
        "eviction.resolve_repeated_calls",
        "eviction.resolve_after_asks",
    } <= rules, rules


def results_placed(size: int, *, fresh: bool) -> int:
    """Facts put one by one into the list the partition sees, for one event more."""
    return _grown(size, "results_placed", fresh=fresh)


@pytest.mark.parametrize("fresh", [False, True], ids=["same-blocks", "fresh-blocks"])
def test_one_new_event_puts_in_only_what_changed_not_every_cleared_result(fresh: bool) -> None:
    """The list with cleared and settled results in place is spliced from the last one:
    one event more puts in the event and what its arrival changed, not each of the
    hundreds of results cleared before (a copy patched at every one of them)."""
    small, large = results_placed(1_000, fresh=fresh), results_placed(10_000, fresh=fresh)
    assert 0 < small <= MAX_FACTS and 0 < large <= MAX_FACTS, (small, large)
