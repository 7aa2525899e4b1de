"""Quantized history: the start of the history moves in steps, not with every turn."""

from __future__ import annotations

import itertools

from wakeful.compiler import CountingCache, WindowPolicy, load_policy

from .factory import WAKE, base_blocks, snapshot, turn
from .helpers import compile_

POLICY = "[budget]\ncontext_limit = 12000\noutput_reserve = 500\nhistory_quantum = {q}\n"
ROLES = ("user", "assistant")


def _session(n: int) -> list:
    """n exchanges of earlier wakes, a user turn and a reply each, of varied length."""
    out = []
    for i in range(n):
        for r, role in enumerate(ROLES):
            size = 200 + (i * 37 + r * 11) % 600
            out.append(turn(f"h-{i}-{r}", 100 + 2 * i + r, role=role, text=f"{i} " + "w" * size))  # type: ignore[arg-type]
    return out


def _ask(i: int):
    return turn(f"ask-{i}", 10_000 + i, text=f"question {i}", wake_id=f"{WAKE}-{i}")


def _starts(policy: WindowPolicy, n: int, *, cache: CountingCache | None = None) -> list[str]:
    """The first history block of the window after each of n growing compiles."""
    base = [b for b in base_blocks() if b.seq < 20 or b.kind.value != "turn"]
    starts = []
    for i in range(1, n + 1):
        kw = {"cache": cache} if cache is not None else {}
        w = compile_(snapshot([*base, *_session(i), _ask(i)], wake=f"{WAKE}-{i}"), policy, **kw)
        history = [r.block_id for r in w.ledger.included() if r.block_id.startswith("h-")]
        starts.append(history[0])
        assert w.input_tokens <= policy.budget.input_budget
    return starts


def test_history_start_moves_in_quanta_not_every_turn() -> None:
    quantized = load_policy(POLICY.format(q=0.5))
    greedy = load_policy(POLICY.format(q=0))
    n, last = 60, 20
    q_starts, g_starts = _starts(quantized, n), _starts(greedy, n)

    def moves(starts: list[str]) -> int:
        tail = starts[-last - 1 :]
        return sum(a != b for a, b in itertools.pairwise(tail))

    # Over the last compiles both histories overflow their room. Greedy eviction moves the
    # start with almost every new exchange; quantized eviction once per quantum of growth.
    assert moves(g_starts) >= last * 3 // 4
    spec = quantized.budget
    quantum = int(spec.input_budget * spec.allocations.recent * spec.history_quantum)
    grown = sum(len(b.text) // 4 + 8 for b in _session(n)[-2 * last :])  # generous estimate
    assert 0 < moves(q_starts) <= grown // quantum + 1 < moves(g_starts)
    # a cut history always starts at a user turn (h-<i>-0), never mid-exchange
    assert all(s.endswith("-0") for s in q_starts)


def test_incremental_and_cold_compiles_cut_the_history_alike() -> None:
    policy = load_policy(POLICY.format(q=0.25))
    warm = CountingCache()
    assert _starts(policy, 40, cache=warm) == _starts(policy, 40)
