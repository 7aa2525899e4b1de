"""Every strategy produces requests the provider accepts, built as it says it builds them."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from benchmarks.cache_session import generate_session
from benchmarks.cache_strategies import (
    SUMMARIZE_INSTRUCTION,
    CallContext,
    FullHistory,
    FullHistorySystem,
    Plan,
    SlidingWindow,
    Strategy,
    SummarizeThreshold,
    request_tokens,
)
from benchmarks.cache_substrate import AGENT, MemorySubstrate
from benchmarks.cache_timeline import timeline
from benchmarks.cache_variants import EvidenceBeforeHistoryRenderer, greedy_policy
from benchmarks.cache_wakeful import Wakeful
from tests.compiler.helpers import assert_anthropic_valid
from wakeful.compiler import EstimatingCounter, WindowPolicy
from wakeful.substrate.records import StoredEvent
from wakeful.testing.simulator import anthropic_cache
from wakeful.testing.simulator import wire_anthropic as wa
from wakeful.testing.simulator.state import SimError

TURNS = 60
SMALL = WindowPolicy.model_validate(
    WindowPolicy.default().model_dump()
    | {"name": "small"}
    | {"budget": WindowPolicy.default().budget.model_dump() | {"context_limit": 24_000}}
)


Calls = dict[str, list[tuple[CallContext, Plan, list[StoredEvent]]]]


def _plans(strategies: list[Strategy]) -> Calls:
    """Each strategy's plan at every call, with the events the substrate held then."""
    session = generate_session(TURNS, seed=3)
    out: Calls = {s.name: [] for s in strategies}
    for item in timeline(session, MemorySubstrate()):
        if isinstance(item, CallContext):
            events = item.substrate.events(AGENT)
            for s in strategies:
                out[s.name].append((item, s.plan(item), events))
    return out


def _accepted(request: dict[str, Any]) -> int:
    """The simulator's own checks; returns the number of breakpoints."""
    assert_anthropic_valid(request)
    wa.validate_tool_pairing(request)
    _, breakpoints = anthropic_cache.parse_request(request)
    return len(breakpoints)


@pytest.fixture(scope="module")
def plans() -> Calls:
    session = generate_session(TURNS, seed=3)
    return _plans(
        [
            Wakeful(session, WindowPolicy.default(), EstimatingCounter()),
            # A small budget, so that the history overflows within TURNS turns.
            Wakeful(session, SMALL, EstimatingCounter(), name="small", recent_limit=10_000),
            Wakeful(
                session,
                greedy_policy(SMALL),
                EstimatingCounter(),
                name="small_greedy",
                recent_limit=10_000,
                recent_page=1,
                renderer=EvidenceBeforeHistoryRenderer(),
            ),
            FullHistory(),
            FullHistorySystem(),
            SlidingWindow(5),
            SummarizeThreshold(12_000),
        ]
    )


def test_every_request_is_valid_for_the_provider(
    plans: Calls,
) -> None:
    for name, calls in plans.items():
        for _, plan, _ in calls:
            marks = _accepted(plan.request)
            if name == "full_history_system":
                assert marks == 2, "the system prompt's and the rolling one"
            elif not name.startswith(("wakeful", "small")):
                assert marks == 1, f"{name}: one breakpoint, as a careful user sets it"
            for extra in plan.maintenance:
                _accepted(extra.request)


def test_baselines_mark_only_the_last_block(
    plans: Calls,
) -> None:
    for name in ("full_history", "full_history_system", "sliding_window", "summarize_threshold"):
        for _, plan, _ in plans[name]:
            last = plan.request["messages"][-1]["content"][-1]
            assert last["cache_control"] == {"type": "ephemeral", "ttl": "5m"}


def test_full_history_system_adds_an_hour_long_breakpoint_on_the_system_prompt(
    plans: Calls,
) -> None:
    for (_, plain, _), (ctx, marked, _) in zip(
        plans["full_history"], plans["full_history_system"], strict=True
    ):
        (system,) = marked.request["system"]
        assert system == {
            "type": "text",
            "text": ctx.session.instructions,
            "cache_control": {"type": "ephemeral", "ttl": "1h"},
        }
        assert marked.request["messages"] == plain.request["messages"]


def test_full_history_holds_every_event_and_each_wakes_documents(
    plans: Calls,
) -> None:
    ctx, plan, events = plans["full_history"][-1]
    body = json.dumps(plan.request, ensure_ascii=False)
    for e in events:
        if e.kind == "tool_call":
            assert f'"id": "{e.tool_call_id}"' in body
        else:
            assert json.dumps(e.text, ensure_ascii=False)[1:-1] in body
    for docs in ctx.docs.values():
        assert all(f'id=\\"{d.id}\\"' in body for d in docs)


def test_sliding_window_keeps_exactly_the_last_n_model_turns(
    plans: Calls,
) -> None:
    for _, plan, events in plans["sliding_window"][10:]:
        said = [
            block
            for m in plan.request["messages"]
            if m["role"] == "assistant"
            for block in m["content"]
            if block["type"] == "text"
        ]
        replies = [e.text for e in events if e.kind == "turn" and e.role == "assistant"]
        assert [b["text"] for b in said] == replies[-5:]


def test_summarize_compacts_past_the_threshold_and_keeps_decisions_verbatim(
    plans: Calls,
) -> None:
    calls = plans["summarize_threshold"]
    compactions = [plan for _, plan, _ in calls if plan.maintenance]
    assert compactions, "the session passes a 12k threshold"
    for _, plan, _ in calls:
        if plan.maintenance:
            (extra,) = plan.maintenance
            assert extra.kind == "compaction"
            assert extra.request["messages"][-1]["content"][-1]["text"] == SUMMARIZE_INSTRUCTION
            assert request_tokens(plan.request) < request_tokens(extra.request)
    _, last, events = calls[-1]
    body = json.dumps(last.request, ensure_ascii=False)
    assert "<summary>" in body
    for e in events[: len(events) // 2]:
        for line in e.text.splitlines():
            if line.startswith("DECISION "):
                assert json.dumps(line, ensure_ascii=False)[1:-1] in body


def test_wakeful_windows_are_compiled_with_the_wakes_retrieval(
    plans: Calls,
) -> None:
    for ctx, plan, _ in plans["wakeful"]:
        docs = ctx.docs.get(ctx.ref.wake_id, ())
        body = json.dumps(plan.request, ensure_ascii=False)
        assert all(f'id=\\"retrieved:{d.id}\\"' in body for d in docs)
        assert body.count('"cache_control"') <= 4


def test_a_wakes_evidence_follows_its_ask_and_stays_there_in_every_later_call(
    plans: Calls,
) -> None:
    """The first call of a wake with documents sends them right after the ask; every later
    call of the wake sends that same text at that same place, right after the same ask, and
    so does every later wake that carries it (``compiler.evidence.carried``); a wake that
    does not carry it sends none of it in its place."""
    found = 0
    first: dict[str, tuple[str, str]] = {}
    for ctx, plan, _ in plans["wakeful"]:
        texts = [block.get("text", "") for m in plan.request["messages"] for block in m["content"]]
        if ctx.docs.get(ctx.ref.wake_id) and ctx.turn is ctx.wake.turns[0]:
            ask = texts.index(ctx.wake.ask)
            if ask + 1 < len(texts):  # else every document is in the window already
                assert texts[ask + 1].startswith("<evidence")
                first[ctx.wake.ask] = (ctx.ref.wake_id, texts[ask + 1])
        for said, (wake, evidence) in first.items():
            if said in texts:
                after = texts[texts.index(said) + 1]
                if wake == ctx.ref.wake_id:
                    assert after == evidence
                    found += 1
                else:
                    assert after == evidence or not after.startswith("<evidence")
    assert found > len(first) > 0


def test_quantized_history_moves_in_steps(
    plans: Calls,
) -> None:
    def changes(name: str) -> int:
        starts = []
        for _, plan, _ in plans[name]:
            texts = [b.get("text", "") for m in plan.request["messages"] for b in m["content"]]
            starts.append(next(t for t in texts if not t.startswith(("<summary", "<evidence"))))
        return sum(1 for a, b in itertools.pairwise(starts) if a != b)

    # The small budget overflows within the session; sessions and a consolidation also
    # move the start. (tests/compiler/test_history.py compares with greedy eviction.)
    assert 0 < changes("small") < len(plans["small"]) // 3


def test_simulator_refuses_a_broken_request() -> None:
    """The validity checks above can fail: an orphan tool_use is a 400."""
    bad = {
        "model": "m",
        "max_tokens": 5,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}],
            },
            {"role": "user", "content": [{"type": "text", "text": "no result"}]},
        ],
    }
    with pytest.raises(SimError):
        wa.validate_tool_pairing(bad)
