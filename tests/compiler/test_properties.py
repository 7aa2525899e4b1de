"""Property tests over generated histories (hypothesis)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wakeful.compiler import Block, BlockKind, Role, Snapshot, WindowPolicy, load_policy
from wakeful.errors import BudgetError

from .factory import AGENT, NOW, WAKE, block, pair, turn
from .helpers import assert_anthropic_valid, compile_

KINDS = ("turn", "pair", "memory", "retrieved", "summary", "resolved_pair")


@st.composite
def histories(draw: Any) -> list[Block]:
    blocks: list[Block] = [
        block("tool-a", BlockKind.TOOL_SCHEMA, "Tool A.", tool_name="a"),
        block("rule", BlockKind.SYSTEM_RULE, "Be careful.", seq=1),
        block("frame", BlockKind.TASK_FRAME, "Watch the fleet.", seq=2),
    ]
    for n in range(draw(st.integers(0, 3))):
        blocks.append(
            block(f"D-{n}", BlockKind.LOAD_BEARING, f"decision {n}", seq=3 + n, load_bearing=True)
        )
    seq = 10
    for n, kind in enumerate(draw(st.lists(st.sampled_from(KINDS), max_size=40))):
        size = draw(st.integers(1, 1500))
        text = f"{kind} {n} " + "z" * size
        if kind == "turn":
            role = draw(st.sampled_from([Role.USER, Role.ASSISTANT]))
            blocks.append(turn(f"t-{n}", seq, role, text=text))
        elif kind in ("pair", "resolved_pair"):
            call, result = pair(f"p-{n}", seq, resolved=kind == "resolved_pair")
            blocks += [call, result.model_copy(update={"text": text})]
            seq += 1
        elif kind == "summary":
            blocks.append(block(f"s-{n}", BlockKind.SUMMARY, text, seq=seq))
        else:
            blocks.append(
                block(f"e-{n}", BlockKind(kind), text, seq=seq, relevance=draw(st.floats(0, 1)))
            )
        seq += 1
    blocks.append(turn("ask", seq, text="what now?", wake_id=WAKE))
    if draw(st.booleans()):
        blocks.extend(pair("live", seq + 1, wake=WAKE))
    return blocks


limits = st.sampled_from([3_000, 6_000, 20_000])
# Enough examples to find a broken invariant, few enough to keep the suite fast.
bounded = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _policy(limit: int) -> WindowPolicy:
    return load_policy(f"[budget]\ncontext_limit = {limit}\noutput_reserve = 500\n")


def _snap(blocks: list[Block]) -> Snapshot:
    return Snapshot(agent=AGENT, as_of=NOW, current_wake_id=WAKE, blocks=tuple(blocks))


@bounded
@given(histories(), limits, st.sampled_from(["anthropic", "openai_chat", "openai_responses"]))
def test_invariants_hold_or_the_compile_fails_loudly(
    blocks: list[Block], limit: int, provider: str
) -> None:
    policy = _policy(limit)
    try:
        w = compile_(_snap(blocks), policy, provider=provider)
    except BudgetError as err:
        assert err.block_ids  # names what did not fit
        return
    # byte-identical for equal inputs
    again = compile_(_snap(list(blocks)), policy, provider=provider)
    assert again.request_json == w.request_json and again.ledger == w.ledger
    # the budget is never exceeded
    assert w.input_tokens <= policy.budget.input_budget
    # no load-bearing block is dropped unless a load-bearing block superseded it
    for b in blocks:
        if b.load_bearing:
            row = w.ledger.row(b.id)
            assert row is not None and (row.position >= 0 or row.reason == "superseded")
    # tool_use and tool_result are kept or dropped together
    rows = {r.block_id: r for r in w.ledger.rows}
    for b in blocks:
        if b.kind is BlockKind.TOOL_CALL:
            result = rows[b.id.replace("-call", "-result")]
            assert (rows[b.id].position >= 0) == (result.position >= 0)
    if provider == "anthropic":
        assert_anthropic_valid(w.request)
    assert len(w.ledger.rows) >= len(blocks)


@bounded
@given(histories(), st.sampled_from(["turn", "pair", "memory", "live"]), limits)
def test_appending_an_event_never_changes_the_cacheable_segments(
    blocks: list[Block], extra: str, limit: int
) -> None:
    policy = _policy(limit)
    try:
        before = compile_(_snap(blocks), policy)
    except BudgetError:
        return
    seq = 10_000
    added: list[Block]
    if extra == "turn":
        added = [turn("new", seq, text="new " * 300)]
    elif extra == "pair":
        added = list(pair("new", seq))
    elif extra == "memory":
        added = [block("new", BlockKind.MEMORY, "fresh fact " * 100, seq=seq, relevance=1.0)]
    else:
        added = list(pair("new-live", seq, wake=WAKE))
    try:
        after = compile_(_snap([*blocks, *added]), policy)
    except BudgetError:
        return
    assert after.stable_prefix_hash == before.stable_prefix_hash
    if before.input_tokens <= after.ledger.usable_tokens and not any(
        r.reason == "pressure" for r in after.ledger.rows
    ):
        assert after.semi_stable_hash == before.semi_stable_hash
        assert after.request["system"] == before.request["system"]
        assert after.request.get("tools") == before.request.get("tools")
