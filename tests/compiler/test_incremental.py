"""Incremental compiles: a long-lived cache never changes a byte of the output.

A worker compiles each call of an agent from the difference to its previous snapshot
(``partition.py``), matches new Block objects to the facts of equal blocks
(``lookup.py``) and reads candidates lazily (``streams.py``). Each of those is checked
here the only way that matters: every compile in a sequence of edited snapshots, made with
one cache, equals a cold compile of the same snapshot, request and ledger.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wakeful.compiler import (
    Block,
    BlockKind,
    CountingCache,
    Role,
    Snapshot,
    WindowPolicy,
    load_policy,
)
from wakeful.errors import BudgetError

from .factory import AGENT, NOW, block, goal, pair, turn
from .helpers import compile_

WAKES = ("wake-a", "wake-b")
KEYS = ("k1", "k2")
POLICY = load_policy(
    "[budget]\ncontext_limit = 4000\noutput_reserve = 300\nscan_limit = 4\n"
    "[eviction]\nmin_relevance = { retrieved = 0.2 }\n"
    "[staleness]\nmode = 'flag'\n"
    "[[triggers]]\nname = 't'\nintents = ['x']\ninject = ['k2']\nrules = ['Be brief.']\n"
)
POLICIES = (WindowPolicy.default(), POLICY)
SCORES = st.sampled_from([0.0, -0.0, 0.3, 0.9, 1.0, float("nan")])


@st.composite
def a_block(draw: Any, n: int) -> list[Block]:
    kind = draw(st.sampled_from(["turn", "pair", "memory", "retrieved", "conversation", "rule"]))
    seq = 10 + 3 * n
    text = f"{kind} {n} " + "w" * draw(st.integers(1, 600))
    wake = draw(st.sampled_from([None, None, *WAKES]))
    key = draw(st.sampled_from([None, None, *KEYS]))
    if kind == "turn":
        role = draw(st.sampled_from(list(Role)))
        return [turn(f"t{n}", seq, role, text=text, wake_id=wake)]
    if kind == "pair":
        call, result = pair(
            f"c{draw(st.integers(0, 3)) if draw(st.booleans()) else n}",
            seq,
            wake=wake,
            resolved=draw(st.booleans()),
            supersession_key=key if draw(st.booleans()) else None,
        )
        call = call.model_copy(update={"id": f"u{n}"})
        result = result.model_copy(update={"id": f"r{n}", "text": text})
        halves = [call, result]
        return halves[: draw(st.integers(1, 2))] if draw(st.booleans()) else halves
    captured = NOW - timedelta(days=draw(st.integers(0, 40)), minutes=seq)
    extra: dict[str, Any] = {}
    if kind == "conversation":
        extra = {"session_id": draw(st.sampled_from(["s1", "s2"])), "captured_at": captured}
        kind = "retrieved"
    if draw(st.integers(0, 5)) == 0:
        extra["stale_after"] = NOW - timedelta(hours=1)
    return [
        block(
            f"b{n}",
            BlockKind.SYSTEM_RULE if kind == "rule" else BlockKind(kind),
            draw(st.sampled_from([text, "shared text", "Be brief."])),
            seq=seq,
            relevance=draw(SCORES),
            importance=draw(SCORES),
            supersession_key=key,
            load_bearing=draw(st.integers(0, 6)) == 0,
            optional=draw(st.integers(0, 6)) == 0,
            **extra,
        )
    ]


@st.composite
def sequences(draw: Any) -> tuple[list[list[Block]], list[Any]]:
    blocks = [block("tool", BlockKind.TOOL_SCHEMA, "Tool.", tool_name="t")]
    for n in range(draw(st.integers(0, 25))):
        blocks += draw(a_block(n))
    steps: list[list[Block]] = [blocks]
    settings_: list[Any] = [(WAKES[0], goal())]
    for n in range(100, 100 + draw(st.integers(1, 5))):
        blocks = list(blocks)
        edit = draw(st.sampled_from(["grow", "grow", "trim", "change", "reload", "swap"]))
        if edit == "grow":
            at = draw(st.integers(0, len(blocks)))
            blocks[at:at] = draw(a_block(n))
        elif edit == "trim" and len(blocks) > 1:
            del blocks[draw(st.integers(1, len(blocks) - 1))]
        elif edit == "change" and len(blocks) > 1:
            at = draw(st.integers(1, len(blocks) - 1))
            update = draw(
                st.sampled_from(
                    [
                        {"importance": 0.7},
                        {"relevance": float("nan")},
                        {"resolved": True},
                        {"text": "changed"},
                        {"wake_id": WAKES[1]},
                        {"stale_after": NOW - timedelta(hours=2)},
                    ]
                )
            )
            blocks[at] = blocks[at].model_copy(update=update)
        elif edit == "reload":  # new objects, equal values: what a worker loads
            blocks = [Block.model_validate(b.model_dump()) for b in blocks]
        elif edit == "swap" and len(blocks) > 2:
            i, j = draw(st.integers(1, len(blocks) - 1)), draw(st.integers(1, len(blocks) - 1))
            blocks[i], blocks[j] = blocks[j], blocks[i]
        steps.append(blocks)
        settings_.append(
            (
                draw(st.sampled_from([None, *WAKES])),
                goal(intents=("x",) if draw(st.booleans()) else ()),
            )
        )
    return steps, settings_


def _compile(snap: Snapshot, policy: WindowPolicy, g: Any, cache: CountingCache) -> Any:
    try:
        w = compile_(snap, policy, goal=g, cache=cache)
    except BudgetError as err:
        return str(err)
    # Bytes, not objects: a NaN score equals nothing, not even itself.
    return (w.request_json, w.ledger.model_dump_json())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sequences(),
    st.sampled_from(POLICIES),
    st.sampled_from(["anthropic", "openai_chat", "openai_responses"]),
)
def test_every_compile_with_a_long_lived_cache_equals_a_cold_one(
    sequence: tuple[list[list[Block]], list[Any]], policy: WindowPolicy, provider: str
) -> None:
    steps, settings_ = sequence
    cache = CountingCache()
    agent = AGENT.model_copy(update={"provider": provider})
    for blocks, (wake, g) in zip(steps, settings_, strict=True):
        ids = [b.id for b in blocks]
        if len(set(ids)) != len(ids):
            continue  # a user error either way (test_select covers it)
        snap = Snapshot(agent=agent, as_of=NOW, current_wake_id=wake, blocks=tuple(blocks))
        assert _compile(snap, policy, g, cache) == _compile(snap, policy, g, CountingCache())


def test_duplicate_ids_fail_the_same_with_and_without_history() -> None:
    import pytest

    from wakeful.errors import UserError

    cache = CountingCache()
    blocks = [block("a", BlockKind.MEMORY, "one"), turn("ask", 5, wake_id=WAKES[0])]
    compile_(Snapshot(agent=AGENT, as_of=NOW, current_wake_id=WAKES[0], blocks=tuple(blocks)))
    compile_(
        Snapshot(agent=AGENT, as_of=NOW, current_wake_id=WAKES[0], blocks=tuple(blocks)),
        cache=cache,
    )
    twice = [*blocks[:1], block("a", BlockKind.MEMORY, "two"), *blocks[1:]]
    for c in (cache, CountingCache()):
        snap = Snapshot(agent=AGENT, as_of=NOW, current_wake_id=WAKES[0], blocks=tuple(twice))
        with pytest.raises(UserError, match="repeated: a"):
            compile_(snap, cache=c)
    # the failed compile left nothing behind: the next one is still exact
    snap = Snapshot(agent=AGENT, as_of=NOW, current_wake_id=WAKES[0], blocks=tuple(blocks))
    assert compile_(snap, cache=cache).request_json == compile_(snap).request_json
