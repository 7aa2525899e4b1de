from __future__ import annotations

import pytest

from wakeful.compiler import BlockKind, Role, load_policy
from wakeful.errors import BudgetError

from .factory import WAKE, base_blocks, block, snapshot, turn
from .helpers import compile_

SMALL = "[budget]\ncontext_limit = {limit}\noutput_reserve = 500\n"


def _history(n: int, size: int = 400) -> list:
    roles = (Role.USER, Role.ASSISTANT)
    return [turn(f"h-{i}", 100 + i, roles[i % 2], text=f"{i} " + "w" * size) for i in range(n)]


def test_budget_is_respected_and_oldest_history_goes_first() -> None:
    policy = load_policy(SMALL.format(limit=4000))
    w = compile_(snapshot([*base_blocks(), *_history(60)]), policy)
    assert w.input_tokens <= policy.budget.input_budget
    overhead = w.tokens_by_bucket["overhead"]
    assert w.ledger.input_tokens == w.input_tokens <= w.ledger.usable_tokens + overhead
    kept = [int(r.block_id[2:]) for r in w.ledger.included() if r.block_id.startswith("h-")]
    dropped = [r for r in w.ledger.excluded() if r.block_id.startswith("h-")]
    assert kept and dropped and min(kept) > max(int(r.block_id[2:]) for r in dropped) - 3
    assert all(r.reason == "budget" and r.rule.startswith("budget.allocations") for r in dropped)
    assert w.request["max_tokens"] == 500  # the output reserve is the reply's


def test_load_bearing_that_cannot_fit_fails_naming_the_ids() -> None:
    huge = block("D-big", BlockKind.LOAD_BEARING, "x" * 20_000, seq=40, load_bearing=True)
    with pytest.raises(BudgetError) as err:
        compile_(snapshot([*base_blocks(), huge]), load_policy(SMALL.format(limit=3000)))
    assert "D-big" in err.value.block_ids and "dec-1" in err.value.block_ids
    assert "D-big" in str(err.value)


def test_a_growing_wake_evicts_semi_stable_material_before_failing() -> None:
    skill = block("skill-x", BlockKind.SKILL_BODY, "s" * 2000, seq=6)
    big_ask = turn("ask2", 21, text="q" * 6000, wake_id=WAKE)
    policy = load_policy(SMALL.format(limit=3500))
    w = compile_(snapshot([*base_blocks(), skill, big_ask]), policy)
    row = w.ledger.row("skill-x")
    assert row is not None and row.position < 0
    assert w.ledger.row("dec-1").position >= 0  # type: ignore[union-attr]
    assert w.input_tokens <= policy.budget.input_budget


def test_the_history_takes_the_room_summaries_and_evidence_leave() -> None:
    policy = load_policy(
        "[budget]\ncontext_limit = 6000\noutput_reserve = 500\nhistory_quantum = 0\n"
        "[budget.allocations]\nrecent = 0.05\nevidence = 0.45\n"
    )
    w = compile_(snapshot([*base_blocks(), *_history(30, 200)]), policy)
    # the history takes the room summaries and evidence leave, far past its own share
    history = sum(r.tokens for r in w.ledger.included() if r.block_id.startswith("h-"))
    assert history > 4 * int(policy.budget.input_budget * 0.05)


def test_scan_limit_stops_a_full_bucket() -> None:
    # best-first filling (a quantized history takes nothing older than its anchor)
    policy = load_policy(SMALL.format(limit=3000) + "scan_limit = 1\nhistory_quantum = 0\n")
    tiny = turn("tiny", 99, text="ok")
    w = compile_(snapshot([*base_blocks(), tiny, *_history(40, 2000)]), policy)
    assert w.ledger.row("tiny").position < 0  # type: ignore[union-attr]
    relaxed = load_policy(SMALL.format(limit=3000) + "scan_limit = 100\nhistory_quantum = 0\n")
    w2 = compile_(snapshot([*base_blocks(), tiny, *_history(40, 2000)]), relaxed)
    assert w2.ledger.row("tiny").position >= 0  # type: ignore[union-attr]
