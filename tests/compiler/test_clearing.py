"""Clearing old tool output (``compiler/clearing.py``): large, rare steps, never the current
wake, a note in its place, and no tool schema that comes and goes with it."""

from __future__ import annotations

import itertools

from wakeful.compiler import BlockKind, GoalKind, Role, load_policy
from wakeful.compiler.blocks import CAPPED_META, ON_DEMAND_META, Block
from wakeful.compiler.clearing import ClearingMemo, _history, cleared_results
from wakeful.compiler.facts import Facts, make_facts
from wakeful.compiler.tokens import EstimatingCounter

from .factory import WAKE, block, goal, turn
from .factory import snapshot as make_snapshot
from .helpers import assert_anthropic_valid, compile_

POLICY = load_policy("[eviction]\nclear_tool_output_at = 6000\nclear_tool_output_keep = 1000\n")
ASK = goal("What changed since yesterday?", kind=GoalKind.MESSAGE)


def _wake(n: int, output_lines: int = 200) -> list[Block]:
    """A past wake: the ask, a call, a sizeable result, the reply (seq 10n..10n+3)."""
    wake = f"w-{n}"
    seq = 10 * n
    return [
        turn(f"ask-{n}", seq, text=f"Check the build log of run {n}.", wake_id=wake),
        block(
            f"call-{n}",
            BlockKind.TOOL_CALL,
            "",
            seq=seq + 1,
            role=Role.ASSISTANT,
            tool_call_id=f"tc-{n}",
            tool_name="read_log",
            tool_input={"run": n},
            wake_id=wake,
        ),
        block(
            f"result-{n}",
            BlockKind.TOOL_RESULT,
            f"log of run {n}\n"
            + "\n".join(f"step {k} of run {n}: ok" for k in range(output_lines)),
            seq=seq + 2,
            role=Role.USER,
            tool_call_id=f"tc-{n}",
            tool_name="read_log",
            wake_id=wake,
        ),
        turn(f"reply-{n}", seq + 3, Role.ASSISTANT, text=f"Run {n} passed.", wake_id=wake),
    ]


def _tools() -> list[Block]:
    schema = {"type": "object", "properties": {"run": {"type": "integer"}}}
    return [
        block("tool:read_log", BlockKind.TOOL_SCHEMA, "Read a log.", tool_name="read_log",
              tool_input=schema),
        block("tool:read_result", BlockKind.TOOL_SCHEMA, "Read a stored result.",
              tool_name="read_result", tool_input=schema, meta={ON_DEMAND_META: "1"}),
    ]  # fmt: skip


def _compile(wakes: int, *extra: Block):
    blocks = _tools() + [b for n in range(1, wakes + 1) for b in _wake(n)]
    blocks += [*extra, turn("now", 10_000, text="What changed since yesterday?", wake_id=WAKE)]
    return compile_(make_snapshot(blocks), POLICY, goal=ASK)


def _cleared(w) -> list[str]:  # type: ignore[no-untyped-def]
    return [r.block_id for r in w.ledger.rows if r.rule == "eviction.clear_tool_output"]


def _tool_names(w) -> list[str]:  # type: ignore[no-untyped-def]
    return [t["name"] for t in w.request["tools"]]


def test_below_the_threshold_nothing_is_cleared() -> None:
    w = _compile(2)
    assert _cleared(w) == []
    assert _tool_names(w) == ["read_log"]


def test_read_result_is_sent_while_a_shortened_result_is_in_the_snapshot() -> None:
    ask, call, result, reply = _wake(3)
    capped = result.model_copy(update={"meta": {CAPPED_META: "90000"}})
    w = _compile(2, ask, call, capped, reply)
    assert _tool_names(w) == ["read_log", "read_result"]


def test_above_it_old_output_becomes_a_note_naming_its_handle() -> None:
    w = _compile(8)
    cleared = _cleared(w)
    assert cleared and cleared == [f"result-{n}" for n in range(1, len(cleared) + 1)]
    assert "result-8" not in cleared  # the newest history keeps its output
    row = w.ledger.row("result-1")
    assert row is not None and row.status == "collapsed" and row.tokens_freed > 500
    assert w.ledger.row("call-1").status == "included"  # type: ignore[union-attr]
    assert "cleared from the context; call read_log again if you need it] log of run 1" in (
        w.request_json
    )
    assert "step 50 of run 1" not in w.request_json
    assert "step 50 of run 8" in w.request_json
    # No schema joins for it: a tool added to the window would rewrite the whole cache.
    assert _tool_names(w) == ["read_log"]
    assert_anthropic_valid(w.request)


def test_the_current_wake_is_never_cleared() -> None:
    live = [b.model_copy(update={"wake_id": WAKE}) for b in _wake(900, 400)]
    w = _compile(8, *live)
    assert "result-900" not in _cleared(w)
    assert w.ledger.row("result-900").status == "included"  # type: ignore[union-attr]


def test_the_cleared_set_moves_in_steps_and_never_back() -> None:
    seen: list[list[str]] = []
    for wakes in range(2, 16):
        seen.append(_cleared(_compile(wakes)))
    changes = [i for i in range(1, len(seen)) if seen[i] != seen[i - 1]]
    assert 1 <= len(changes) <= len(seen) // 3  # rare: most new wakes change nothing
    for before, after in itertools.pairwise(seen):
        assert after[: len(before)] == before  # only ever grows, from the oldest on


def test_an_unchanged_cleared_set_keeps_the_prefix() -> None:
    """Between steps, a new wake appends: the earlier window is a prefix of the next one."""
    sets = {w: _cleared(_compile(w)) for w in range(2, 16)}
    wakes = next(w for w in range(3, 15) if sets[w] and sets[w] == sets[w + 1])
    a, b = _compile(wakes), _compile(wakes + 1)
    first = [m for m in a.request["messages"] if m is not a.request["messages"][-1]]
    assert b.request["messages"][: len(first) - 1] == first[:-1]
    assert a.request["tools"] == b.request["tools"] and a.request["system"] == b.request["system"]


def test_clearing_is_off_at_zero_and_a_keep_above_the_threshold_is_refused() -> None:
    off = load_policy("[eviction]\nclear_tool_output_at = 0\n")
    blocks = _tools() + [b for n in range(1, 9) for b in _wake(n)]
    blocks.append(turn("now", 10_000, text="What changed since yesterday?", wake_id=WAKE))
    w = compile_(make_snapshot(blocks), off, goal=ASK)
    assert _cleared(w) == [] and _tool_names(w) == ["read_log"]
    try:
        load_policy("[eviction]\nclear_tool_output_at = 1000\nclear_tool_output_keep = 1000\n")
    except Exception as exc:
        assert "clear_tool_output_keep (1000) must be below" in str(exc)
    else:
        raise AssertionError("a keep at the threshold was accepted")


def _mark(w, name: str):  # type: ignore[no-untyped-def]
    return next((bp for bp in w.ledger.breakpoints if bp.name == name), None)


def test_a_step_reads_the_cleared_part_through_the_entry_the_calls_before_wrote() -> None:
    """The provider looks back only ~20 blocks from a breakpoint: without an entry where the
    cleared part ends, a step would rewrite the history from its start. Between steps the
    calls mark that end; the step's own wake keeps the mark there, where the entry is."""
    sets = {w: _cleared(_compile(w)) for w in range(2, 24)}
    steps = [w for w in range(3, 24) if sets[w] != sets[w - 1] and sets[w - 1]]
    assert steps, sets  # a second step happens in this session
    step = steps[0]
    before, at, after = _compile(step - 1), _compile(step), _compile(step + 1)
    held = _mark(before, "cleared")
    assert held is not None and held.block_id == sets[step - 1][-1]
    kept = _mark(at, "cleared")
    assert kept is not None and kept.prefix_hash == held.prefix_hash  # read, not rewritten
    moved = _mark(after, "cleared")  # the next wake marks the new end, inside what it reads
    assert moved is not None and moved.block_id == sets[step][-1] != held.block_id
    assert len(at.ledger.breakpoints) <= 4
    assert_anthropic_valid(at.request)


def test_a_step_clears_all_but_the_newest_kept_tokens() -> None:
    """When the boundary moves it moves as far as it can: to ``keep`` tokens before the end
    of the history, so a step leaves no more uncleared output than ``keep`` asks for (here
    the newest wake's, ~2k tokens; keep is 1k) and the next step is a full step away."""
    steps = 0
    previous: list[str] = []
    for wakes in range(2, 16):
        cleared = _cleared(_compile(wakes))
        if cleared != previous:
            steps += 1
            assert cleared == [f"result-{n}" for n in range(1, wakes)], wakes
        previous = cleared
    assert steps >= 2


def _facts(blocks: list[Block]) -> list[Facts]:
    counts: dict[str, int] = {}
    return [make_facts(b, counts, EstimatingCounter(), POLICY.ranking) for b in blocks]


def test_a_history_read_without_its_answer_is_not_taken_for_the_one_last_answered() -> None:
    """The memo's last answer is reused only over the history it was read from: when a
    compile stopped after reading a history (run 1's result now resolved) but before
    clearing, the next one does not carry over that result as cleared."""
    eviction = POLICY.eviction
    wakes = [b for n in range(2, 30) for b in _wake(n)]
    first = _facts([*_wake(1), *wakes])
    settled = [b.model_copy(update={"resolved": True}) if b.id == "result-1" else b
               for b in _wake(1)]  # fmt: skip
    second = _facts([*settled, *wakes])
    third = [*second, *_facts(_wake(30))]
    memo = ClearingMemo()
    assert cleared_results(first, None, eviction, memo)
    _history(second, None, memo)  # read, then the compile stopped
    assert cleared_results(third, None, eviction, memo) == cleared_results(third, None, eviction)
