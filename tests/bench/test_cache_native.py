"""The providers' own context management, replayed as their documentation says it works."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any, ClassVar, cast

import pytest

from benchmarks.cache_native import (
    CLEARED_PLACEHOLDER,
    AnthropicCompaction,
    ClearToolUses,
    ResponsesCompaction,
)
from benchmarks.cache_report import kept_decisions
from benchmarks.cache_session import AgentSession, generate_session
from benchmarks.cache_strategies import (
    SUMMARIZE_INSTRUCTION,
    CallContext,
    FullHistory,
    request_tokens,
)
from benchmarks.cache_substrate import AGENT, MemorySubstrate
from benchmarks.cache_timeline import timeline
from tests.compiler.helpers import assert_anthropic_valid
from wakeful.substrate.records import StoredEvent
from wakeful.testing.simulator import anthropic_cache
from wakeful.testing.simulator import wire_anthropic as wa
from wakeful.testing.simulator.state import CacheStore

SESSION = generate_session(40, seed=3)


class _Frozen:
    """The events the substrate held at one call (all a baseline reads of it)."""

    def __init__(self, events: list[StoredEvent]) -> None:
        self._events = events

    def events(self, agent: str) -> list[StoredEvent]:
        assert agent == AGENT
        return list(self._events)


class Call:
    """One call of the session: its context and the events the substrate held then."""

    def __init__(self, ctx: CallContext) -> None:
        self.events: list[StoredEvent] = list(ctx.substrate.events(AGENT))
        # The shared substrate grows as the replay goes on: keep this call's events.
        self.ctx = dataclasses.replace(ctx, substrate=cast(Any, _Frozen(self.events)))
        self.full = FullHistory().plan(ctx).request
        self.size = request_tokens(self.full)


def _replay(session: AgentSession, strategies: list[Any]) -> list[tuple[Call, list[Any]]]:
    """Every call, with each strategy's plan for it (planned in order, as the bench does)."""
    out = []
    for item in timeline(session, MemorySubstrate()):
        if isinstance(item, CallContext):
            call = Call(item)
            out.append((call, [s.plan(call.ctx) for s in strategies]))
    return out


def _uses(events: list[StoredEvent]) -> list[str]:
    return [e.tool_call_id for e in events if e.kind == "tool_call" and e.tool_call_id]


def _results(request: dict[str, Any]) -> dict[str, Any]:
    return {
        b["tool_use_id"]: b["content"]
        for m in request["messages"]
        for b in m["content"]
        if b.get("type") == "tool_result"
    }


def _inputs(request: dict[str, Any]) -> dict[str, Any]:
    return {
        b["id"]: b["input"]
        for m in request["messages"]
        for b in m["content"]
        if b.get("type") == "tool_use"
    }


def _valid(request: dict[str, Any]) -> None:
    assert_anthropic_valid(request)
    wa.validate_tool_pairing(request)


def _cache(store: CacheStore, request: dict[str, Any], now: float) -> int:
    blocks, breakpoints = anthropic_cache.parse_request(request)
    result = anthropic_cache.apply_cache(
        store, model=request["model"], blocks=blocks, breakpoints=breakpoints, now=now
    )
    return result.cache_read_input_tokens


def test_documented_defaults() -> None:
    clear = ClearToolUses()
    assert (clear.trigger, clear.keep, clear.clear_at_least) == (100_000, 3, 0)
    assert clear.clear_tool_inputs is False and clear.exclude_tools == ()
    assert AnthropicCompaction().threshold == 150_000
    assert ResponsesCompaction().threshold == 200_000
    with pytest.raises(ValueError, match="at least 50000"):
        AnthropicCompaction(threshold=49_999)


def test_clearing_starts_once_the_context_exceeds_the_trigger_and_keeps_the_newest_uses() -> None:
    calls = [c for c, _ in _replay(SESSION, []) if len(_uses(c.events)) >= 5]
    assert calls, "the session makes enough tool calls"
    for call in calls[:5]:
        at = ClearToolUses(trigger=call.size).plan(call.ctx).request
        assert at == call.full, "at the trigger nothing is cleared: it must be exceeded"
        cleared = ClearToolUses(trigger=call.size - 1).plan(call.ctx).request
        _valid(cleared)
        uses = _uses(call.events)
        results = _results(cleared)
        kept = [u for u in uses if results.get(u) != CLEARED_PLACEHOLDER]
        assert kept == uses[-3:], "the 3 most recent tool uses stay, the older are cleared"
        assert _inputs(cleared) == _inputs(call.full), "the calls' inputs stay by default"
        assert request_tokens(cleared) < call.size
        # With clear_tool_inputs the cleared calls lose their inputs too; the kept keep them.
        both = ClearToolUses(trigger=call.size - 1, clear_tool_inputs=True).plan(call.ctx)
        inputs = _inputs(both.request)
        assert all(inputs[u] == {} for u in uses[:-3])
        assert all(inputs[u] == _inputs(call.full)[u] for u in uses[-3:])
        # A clearing that would free less than clear_at_least is not applied.
        freed = call.size - request_tokens(cleared)
        skipped = ClearToolUses(trigger=call.size - 1, clear_at_least=freed + 1)
        assert skipped.plan(call.ctx).request == call.full
        applied = ClearToolUses(trigger=call.size - 1, clear_at_least=freed)
        assert applied.plan(call.ctx).request == cleared


def test_excluded_tools_are_never_cleared() -> None:
    call = next(c for c, _ in _replay(SESSION, []) if len(_uses(c.events)) >= 6)
    names = {e.tool_call_id: e.tool_name for e in call.events if e.kind == "tool_call"}
    spared = names[_uses(call.events)[0]] or ""
    request = ClearToolUses(trigger=0, exclude_tools=(spared,)).plan(call.ctx).request
    results = _results(request)
    assert all(results[u] != CLEARED_PLACEHOLDER for u, n in names.items() if n == spared)
    others = [u for u in _uses(call.events) if names[u] != spared]
    assert [u for u in others if results[u] != CLEARED_PLACEHOLDER] == others[-3:]


def test_a_new_clearing_invalidates_the_cached_prefix_from_the_first_cleared_result() -> None:
    clear = ClearToolUses(trigger=0)
    replay = _replay(SESSION, [clear])
    pairs = [
        (a, b)
        for (a, _), (b, _) in itertools.pairwise(replay)
        if len(_uses(b.events)) == len(_uses(a.events)) + 1 and len(_uses(a.events)) >= 3
    ]
    assert pairs, "a call that adds one tool use to a history past keep"
    a, b = pairs[0]
    requests = {c.ctx.turn.index: p.request for c, (p,) in replay}
    ra, rb = requests[a.ctx.turn.index], requests[b.ctx.turn.index]
    newly = _uses(b.events)[-4]  # the use that fell out of the newest 3
    assert _results(ra)[newly] != CLEARED_PLACEHOLDER
    assert _results(rb)[newly] == CLEARED_PLACEHOLDER
    # The two requests agree up to the newly cleared result and differ from there on.
    blocks_a, _ = anthropic_cache.parse_request(ra)
    blocks_b, _ = anthropic_cache.parse_request(rb)
    differ = next(
        i
        for i, (x, y) in enumerate(zip(blocks_a, blocks_b, strict=False))
        if x.identity != y.identity
    )
    assert _block_at(rb, blocks_b[differ].path).get("tool_use_id") == newly
    # So the provider finds none of the previous request's cache entry (its one
    # breakpoint is past the change), while full history would read all of it.
    store = CacheStore()
    assert _cache(store, ra, 0.0) == 0
    assert _cache(store, rb, 1.0) == 0
    store = CacheStore()
    _cache(store, a.full, 0.0)
    assert _cache(store, b.full, 1.0) > 0


def _block_at(request: dict[str, Any], path: str) -> dict[str, Any]:
    node: Any = request
    for part in path.split("."):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return dict(node)


class _LowTrigger(AnthropicCompaction):
    minimum: ClassVar[int] = 0  # small sessions: the mechanics at any size


def test_anthropic_compaction_replaces_everything_once_the_input_reaches_the_trigger() -> None:
    call = next(c for c, _ in _replay(SESSION, []) if c.ctx.turn.index >= 20)
    below = _LowTrigger(threshold=call.size + 1).plan(call.ctx)
    assert below.request == call.full and below.maintenance == ()
    compaction = _LowTrigger(threshold=call.size)
    plan = compaction.plan(call.ctx)
    (step,) = plan.maintenance
    assert step.kind == "compaction"
    assert step.request["messages"][-1]["content"][-1]["text"] == SUMMARIZE_INSTRUCTION
    assert step.request["messages"][:-1] == call.full["messages"][:-1], "same prompt, cached"
    _valid(plan.request)
    (message,) = plan.request["messages"]
    assert message["content"][0]["text"].startswith("<summary>")
    # The summary keeps the load-bearing facts stated so far, verbatim (the assumption).
    stated = [d for d in SESSION.decisions if d.turn < call.ctx.turn.index]
    assert stated and kept_decisions(plan.request, stated) == [d.id for d in stated]
    (summary,) = compaction.details()["summary_tokens"]
    assert 0 < summary < call.size


def test_later_calls_continue_from_the_summary_and_compact_again_past_the_trigger() -> None:
    compaction = _LowTrigger(threshold=6_000)
    replay = _replay(SESSION, [compaction])
    fired = [c.ctx.turn.index for c, (p,) in replay if p.maintenance]
    assert len(fired) >= 2
    for call, (plan,) in replay:
        _valid(plan.request)
        if not plan.maintenance:
            assert request_tokens(plan.request) < 6_000 or call.ctx.turn.index < fired[0]
    after = [p.request for c, (p,) in replay if c.ctx.turn.index == fired[0] + 1]
    if after:
        assert after[0]["messages"][0]["content"][0]["text"].startswith("<summary>")


def test_responses_compaction_keeps_user_messages_and_replaces_the_rest() -> None:
    call = next(c for c, _ in _replay(SESSION, []) if c.ctx.turn.index >= 20)
    at = ResponsesCompaction(threshold=call.size).plan(call.ctx)
    assert at.request == call.full and at.maintenance == (), "it must cross the threshold"
    plan = ResponsesCompaction(threshold=call.size - 1).plan(call.ctx)
    assert len(plan.maintenance) == 1
    _valid(plan.request)
    (message,) = plan.request["messages"]
    texts = [b.get("text", "") for b in message["content"]]
    assert texts[-1].startswith("<compaction>")
    asks = [e.text for e in call.events if e.kind == "turn" and e.role == "user"]
    assert [t for t in texts if t in asks] == asks, "every user message, verbatim, in order"
    assert not _inputs(plan.request) and not _results(plan.request)
    replies = [e.text for e in call.events if e.kind == "turn" and e.role == "assistant"]
    assert not any(t in replies for t in texts if t), "assistant messages are compacted"
