"""Derive's lists spliced from the last compile's (``splice.py``) are the lists it would
have patched: every compile of a sequence of edited histories, with one long-lived cache,
equals a cold compile of the same snapshot, request and ledger.

The histories are where splicing has work to do: tool output cleared in steps (a boundary
that moves as wakes arrive), results settled as stale, repeated or asked past, an
on-demand tool left out, and edits that move all of these (an event or a wake arriving, a
wake inserted, the history trimmed at the front, a result resolved, time passing, the
current wake changing, blocks loaded anew).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wakeful.compiler import Block, BlockKind, CountingCache, Role, Snapshot, load_policy
from wakeful.compiler.blocks import ON_DEMAND_META
from wakeful.compiler.splice import changed_outside

from .factory import AGENT, NOW, block, goal, turn
from .helpers import compile_

POLICY = load_policy(
    "[budget]\ncontext_limit = 6000\noutput_reserve = 300\n"
    "[eviction]\nclear_tool_output_at = 600\nclear_tool_output_keep = 200\n"
    "resolve_repeated_calls = true\nresolve_after_asks = 3\n"
)
SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}


def tools() -> list[Block]:
    return [
        block("tool:read_log", BlockKind.TOOL_SCHEMA, "Read a log.", tool_name="read_log",
              tool_input=SCHEMA),
        block("tool:read_result", BlockKind.TOOL_SCHEMA, "Read a stored result.",
              tool_name="read_result", tool_input=SCHEMA, meta={ON_DEMAND_META: "1"}),
    ]  # fmt: skip


def a_wake(n: int, *, stale: bool, repeat: int | None) -> list[Block]:
    """A wake: an ask, a tool pair (its query repeats wake ``repeat``'s, or not; its result
    goes stale, or not) and the reply."""
    wake, seq = f"w-{n}", 10 * n
    query = f"run {repeat if repeat is not None else n}"
    return [
        turn(f"ask-{n}", seq, text=f"Check {query}.", wake_id=wake),
        block(f"call-{n}", BlockKind.TOOL_CALL, "", seq=seq + 1, role=Role.ASSISTANT,
              tool_call_id=f"tc-{n}", tool_name="read_log", tool_input={"q": query},
              wake_id=wake),
        block(f"result-{n}", BlockKind.TOOL_RESULT, f"log of {query}\n" + "ok\n" * 60,
              seq=seq + 2, role=Role.USER, tool_call_id=f"tc-{n}", tool_name="read_log",
              wake_id=wake, stale_after=NOW + timedelta(hours=n % 5) if stale else None),
        turn(f"reply-{n}", seq + 3, Role.ASSISTANT, text=f"{query} passed.", wake_id=wake),
    ]  # fmt: skip


@st.composite
def wakes(draw: Any, first: int, count: int) -> list[Block]:
    out: list[Block] = []
    for n in range(first, first + count):
        stale = draw(st.booleans())
        repeat = draw(st.one_of(st.none(), st.integers(0, max(0, n - 1))))
        out += a_wake(n, stale=stale, repeat=repeat)
    return out


EDITS = [
    "event",
    "event",
    "event",
    "wake",
    "insert",
    "trim",
    "resolve",
    "time",
    "current",
    "reload",
]


@st.composite
def histories(draw: Any) -> tuple[list[list[Block]], list[tuple[str, Any]]]:
    blocks = tools() + draw(wakes(0, draw(st.integers(3, 14))))
    steps, at = [blocks], [("wake-live", NOW)]
    wake, now, n = "wake-live", NOW, 1000
    for _ in range(draw(st.integers(2, 7))):
        blocks = list(blocks)
        edit = draw(st.sampled_from(EDITS))
        n += 1
        if edit == "event":
            blocks.append(turn(f"live-{n}", 10**6 + n, text=f"live event {n}", wake_id=wake))
        elif edit == "wake":
            blocks += draw(wakes(n, 1))
        elif edit == "insert":
            place = draw(st.integers(2, len(blocks)))
            blocks[place:place] = draw(wakes(n, 1))
        elif edit == "trim" and len(blocks) > 6:
            del blocks[2 : 2 + draw(st.integers(1, 4))]
        elif edit == "resolve":
            place = draw(st.integers(2, len(blocks) - 1))
            blocks[place] = blocks[place].model_copy(update={"resolved": True})
        elif edit == "time":
            now += timedelta(hours=draw(st.integers(1, 4)))
        elif edit == "current":
            wake = draw(st.sampled_from(["wake-live", "wake-next", "w-1"]))
        elif edit == "reload":  # new objects, equal values: what a worker loads
            blocks = [Block.model_validate(b.model_dump()) for b in blocks]
        steps.append(blocks)
        at.append((wake, now))
    return steps, at


def _compile(snap: Snapshot, now: Any, cache: CountingCache) -> tuple[str, str]:
    window = compile_(snap, POLICY, goal=goal(), now=now, cache=cache)
    return window.request_json, window.ledger.model_dump_json()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_every_spliced_compile_equals_a_cold_one(
    history: tuple[list[list[Block]], list[tuple[str, Any]]],
) -> None:
    steps, at = history
    cache = CountingCache()
    for blocks, (wake, now) in zip(steps, at, strict=True):
        snap = Snapshot(agent=AGENT, as_of=now, current_wake_id=wake, blocks=tuple(blocks))
        assert _compile(snap, now, cache) == _compile(snap, now, CountingCache())


def test_a_history_grown_by_events_is_spliced() -> None:
    """The sequence above is not only the general path: a history that grows by events
    puts in each event (once cleared, once settled) and what it moved, not every cleared
    and settled result again (the counted work of ``splice.py``)."""
    blocks = tools() + [b for n in range(60) for b in a_wake(n, stale=n % 2 == 0, repeat=n // 2)]
    cache = CountingCache()
    placed = []
    for n in range(4):
        blocks = [*blocks, turn(f"live-{n}", 10**6 + n, text=f"event {n}", wake_id="wake-live")]
        snap = Snapshot(agent=AGENT, as_of=NOW, current_wake_id="wake-live", blocks=tuple(blocks))
        before = cache.work.results_placed
        _compile(snap, NOW, cache)
        placed.append(cache.work.results_placed - before)
    first = placed[0]  # the first compile places every cleared and settled result
    assert first > 40 and all(p <= 4 for p in placed[1:]), placed


def test_answers_compared_outside_the_stretch_with_the_tail_shifted() -> None:
    cleared = (False, (("cleared", "1"),))
    end = (False, (("cleared", "end"),))
    old = [(2, cleared), (5, cleared), (9, end), (20, cleared)]
    # Two facts were inserted at 10 (head 10, tail 12 of 22 -> 24): 20 is now 22.
    new = [(2, cleared), (5, end), (9, end), (11, cleared), (22, cleared)]
    assert changed_outside(new, old, (10, 12, 24, 22)) == [5]
    assert changed_outside(new[:2], old, (10, 12, 24, 22)) == [5, 9, 22]
    many = [(n, cleared) for n in range(100)]
    assert changed_outside(many, [], (100, 0, 100, 0)) is None
