"""Property: whatever arrives — events of any size up to a legal-size webhook, tool output,
rounds of consolidation between wakes — the next wake's window fits its budget, and no
single turn or summary in it takes more than its share.

Offline and quick: the in-memory store and ``compile_for`` (the compile activity's own
path), consolidation's pure rules as the activities run them (``shown_item``, the prompt,
the gate, with the simulator's extractive summariser as the model), an estimating token
counter, and a fixed, derandomized hypothesis run.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wakeful.activities.consolidate import item_of, shown_item
from wakeful.agents import Agent
from wakeful.compiler import Budget, CompiledWindow, EstimatingCounter, WindowPolicy
from wakeful.compiler.blocks import CAPPED_META, content_hash
from wakeful.compiler.oversize import event_token_limit
from wakeful.consolidation.gate import GateInput, run_gate, summary_token_limit
from wakeful.consolidation.policy import ConsolidationPolicy
from wakeful.consolidation.prompt import build_prompt
from wakeful.consolidation.spans import select_spans
from wakeful.substrate.records import EventIn, SummaryRecord
from wakeful.testing import MemoryStore, compile_for
from wakeful.testing.simulator.summarise import summary_text
from wakeful.tool_results import shorten

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
COUNTER = EstimatingCounter()
AGENT = Agent(name="intake", instructions="Triage parcel scans.", tenant="prop")
CONSOLIDATION = ConsolidationPolicy(keep_recent_events=2, min_age=timedelta(0), span_min_events=2)
TOOL_CAP = 40_000  # characters of a result a tool shows by default (Tool.max_result_chars)
WEBHOOK_CHARS = 262_142  # the largest text the ingress accepts (256 KiB less a JSON frame)
FRAMING = 32  # tokens a block's framing may add to its text's


def scans(chars: int, seed: int) -> str:
    """``chars`` characters of numbered scan lines: every line has a number in it, so an
    extractive summary keeps nearly all of it."""
    line = 0
    out: list[str] = []
    size = 0
    while size < chars:
        text = f"{seed:03d}-{line:06d} parcel scanned at depot {line % 40}, {line % 900} g.\n"
        out.append(text)
        size += len(text)
        line += 1
    return "".join(out)[:chars]


sizes = st.sampled_from([40, 2_000, 20_000, 90_000, WEBHOOK_CHARS])
wake = st.tuples(sizes, st.one_of(st.none(), sizes), st.booleans())  # (ask, tool output, round)
budgets = st.sampled_from([16_384, 32_768, 200_000])


def policy_for(context_limit: int) -> WindowPolicy:
    reserve = min(8_192, context_limit // 4)
    budget = Budget(context_limit=context_limit, output_reserve=reserve)
    return WindowPolicy.default().model_copy(update={"budget": budget})


def record_rest_of_wake(store: MemoryStore, n: int, output: str | None, at: datetime) -> None:
    """What the wake recorded after its first window: a tool call and its result (stored
    as the tools activity stores one: capped, with its handle), and the reply."""
    common = {"session_id": None, "wake_id": f"w{n}", "event_time": at}
    events = []
    if output is not None:
        call = f"call-{n}"
        shown = shorten(output, TOOL_CAP, content_hash(output))
        capped = {CAPPED_META: str(len(output))} if shown != output else {}
        events += [
            EventIn(
                step_key=f"w{n}:call",
                kind="tool_call",
                role="assistant",
                text="{}",
                tool_call_id=call,
                tool_name="scan_log",
                tool_input={},
                **common,
            ),
            EventIn(
                step_key=f"w{n}:result",
                kind="tool_result",
                role="user",
                text=shown,
                tool_call_id=call,
                tool_name="scan_log",
                meta=capped,
                **common,
            ),
        ]
    events.append(
        EventIn(step_key=f"w{n}:reply", kind="turn", role="assistant", text="Noted.", **common)
    )
    store.append_events(AGENT.name, events)


def consolidate(store: MemoryStore, window: WindowPolicy, now: datetime, n: int) -> None:
    """One round of turn spans, as the plan, summarise and commit activities run it."""
    live = [item_of(e) for e in store.events(AGENT.name, include_retired=False)]
    spans = select_spans(
        live, running_wakes=frozenset(), closed=frozenset(), now=now, policy=CONSOLIDATION
    )
    limit = summary_token_limit(window.budget)
    for span in spans:
        events = store.events(AGENT.name)
        items = [shown_item(e, CONSOLIDATION.span_max_chars) for e in events if e.id in span.ids]
        summary = summary_text(build_prompt(1, items, []))
        assert summary is not None
        gate = run_gate(
            GateInput(items=tuple(items), window_tokens=limit), summary, count=COUNTER.count
        )
        if gate.passed:
            store.add_summary(
                SummaryRecord(
                    agent=AGENT.name,
                    step_key=f"r{n}:{span.key}",
                    level=1,
                    span_start=span.ids[0],
                    span_end=span.ids[-1],
                    text=summary,
                    created_at=now,
                ),
                retire_span=True,
                at=now,
            )


def assert_fits(window: CompiledWindow, policy: WindowPolicy) -> None:
    spec = policy.budget
    assert window.input_tokens <= spec.input_budget, (window.input_tokens, spec.input_budget)
    for row in window.ledger.rows:
        if row.status != "included":
            continue
        if row.kind == "turn":
            assert row.tokens <= event_token_limit(spec) + FRAMING, row
        elif row.kind == "summary":
            assert row.tokens <= summary_token_limit(spec) + FRAMING, row


@settings(
    max_examples=24,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(context_limit=budgets, wakes=st.lists(wake, min_size=1, max_size=5), last=sizes)
def test_every_next_window_fits(
    context_limit: int, wakes: list[tuple[int, int | None, bool]], last: int
) -> None:
    store = MemoryStore("prop")
    policy = policy_for(context_limit)
    at = T0
    for n, (ask, output, round_after) in enumerate(wakes):
        window = compile_for(
            AGENT, store, scans(ask, n), now=at, policy=policy, wake_id=f"w{n}", counter=COUNTER
        )
        assert_fits(window, policy)
        record_rest_of_wake(store, n, None if output is None else scans(output, 100 + n), at)
        at += timedelta(minutes=10)
        if round_after:
            consolidate(store, policy, at, n)
    for summary in store.summaries(AGENT.name):  # the gate kept every summary small
        assert COUNTER.count(summary.text) <= summary_token_limit(policy.budget)
    window = compile_for(
        AGENT, store, scans(last, 999), now=at, policy=policy, wake_id="next", counter=COUNTER
    )
    assert_fits(window, policy)
