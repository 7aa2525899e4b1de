"""Evidence stays byte-identical across the calls of one wake.

A tool wake compiles once per model call. The first call's retrieved evidence goes after
the wake's content and is recorded with the wake (an ``evidence`` event, as the compile
activity records it); the second call sends it from there, so whatever the wake adds after
it (the model's reply, a tool result) leaves it alone. Here the model's reply repeats, word
for word, an assistant turn of an earlier session that retrieval found; the second call
must still begin with every byte of the first one, and the provider's cache (the
simulator's Anthropic rules) must read all of it.

Real parts: the event log and the index cursor in embedded Postgres, the event index,
retrieval (``retrieve_into``), the evidence event the compile activity appends, the
compiler, the simulator.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tests.substrate.events import tool_event, turn_event
from wakeful.activities.compile import evidence_event
from wakeful.compiler import CompiledWindow, CountingCache, EstimatingCounter, WindowPolicy
from wakeful.compiler.blocks import AgentProfile, BlockKind, Goal, GoalKind, Snapshot
from wakeful.contracts import WakeRef
from wakeful.substrate.embedders import HashingEmbedder
from wakeful.substrate.indexing import EventIndex, retrieve_into
from wakeful.substrate.records import CompileRecord, EventIn
from wakeful.substrate.snapshot import event_block
from wakeful.substrate.store import TenantStore
from wakeful.substrate.vectors.memory import MemoryVectorStore
from wakeful.testing.simulator.anthropic_cache import apply_cache, parse_request
from wakeful.testing.simulator.state import CacheStore

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
WAKE = "w-tool"
WAKE_REF = WakeRef(
    tenant="t", agent="a1", wake_id=WAKE, session_id="s2", workflow_id="wf", number=1
)
ECHO = "Let me read the deploy config before I change the rotation schedule."
# A question: it may bring a question's evidence (``compiler.admission``).
ASK = "Can you move the deploy key rotation to Wednesdays? What does the config say?"
MODEL = "claude-sonnet-4-5"
# Long enough that the first call's prefix is cacheable (the minimum is 1024 tokens).
INSTRUCTIONS = " ".join(
    f"Rule {n}: answer briefly and cite the config you read." for n in range(150)
)


def _words(text: str) -> int:
    return len(text.split())


def _seed_history(ts: TenantStore) -> None:
    """An earlier session that retrieval will find, including the sentence the model
    repeats in the new wake."""
    ts.upsert_agent("a1", model=MODEL, provider="anthropic", instructions=INSTRUCTIONS, spec={})
    turns = [
        ("user", "The deploy key rotates every Tuesday at noon, config in deploy/keys.toml."),
        ("assistant", ECHO),
        ("user", "The rotation config also names db-2 as the key store for the deploy key."),
        ("assistant", "Noted: the deploy key rotation runs Tuesdays, stored on db-2."),
    ]
    ts.append_events(
        "a1",
        [
            EventIn(
                step_key=f"h{i}",
                kind="turn",
                role=role,  # type: ignore[arg-type]
                text=text,
                session_id="s1",
                event_time=T0 + timedelta(minutes=i),
            )
            for i, (role, text) in enumerate(turns)
        ],
    )


def _append(ts: TenantStore, items: list[EventIn]) -> int:
    return ts.append_events("a1", items)[-1].id


def _call(
    ts: TenantStore,
    index: EventIndex,
    cache: CountingCache,
    call_index: int,
    max_event_id: int,
) -> tuple[CompiledWindow, Snapshot]:
    """One compile as the compile activity makes it: the wake's events, then retrieval."""
    profile = AgentProfile(
        tenant=ts.name, name="a1", model=MODEL, provider="anthropic", instructions=INSTRUCTIONS
    )
    blocks = tuple(event_block(e) for e in ts.events("a1", wake_id=WAKE, max_id=max_event_id))
    now = T0 + timedelta(days=1, minutes=call_index)
    snap = Snapshot(agent=profile, as_of=now, session_id="s2", current_wake_id=WAKE, blocks=blocks)
    policy = WindowPolicy.default()
    snap, digest = retrieve_into(
        index,
        ts,
        snap,
        goal_text=ASK,
        policy=policy,
        max_event_id=max_event_id,
        max_tokens=2000,
        call_index=call_index,
    )
    goal = Goal(kind=GoalKind.MESSAGE, text=ASK)
    window = compile_window_(snap, goal, policy, now, cache)
    if window.evidence_text:
        ts.append_events("a1", [evidence_event(WAKE_REF, call_index, window, now)])
    ts.record_compile(
        CompileRecord(
            agent="a1",
            wake_id=WAKE,
            step_key=f"{WAKE}:{call_index}",
            call_index=call_index,
            as_of=now,
            max_event_id=max_event_id,
            goal={},
            policy_hash="p",
            snapshot_hash="s",
            window_hash=window.window_hash,
            ledger_hash="l",
            stable_prefix_hash=window.stable_prefix_hash,
            input_tokens=window.input_tokens,
            tokens_by_bucket={},
            retrieval_hash=digest,
        )
    )
    return window, snap


def compile_window_(
    snap: Snapshot, goal: Goal, policy: WindowPolicy, now: datetime, cache: CountingCache
) -> CompiledWindow:
    from wakeful.compiler import compile_window

    return compile_window(snap, goal, policy, now, counter=EstimatingCounter(), cache=cache)


def _blocks(request: dict[str, Any]) -> list[bytes]:
    """The request's cacheable content, block by block, as the provider's cache sees it
    (``cache_control`` markers are not part of a block's identity)."""
    blocks, _ = parse_request(request)
    return [b.identity for b in blocks]


def test_a_reply_repeating_evidence_leaves_the_evidence_of_the_next_call_unchanged(
    tenant: TenantStore,
) -> None:
    _seed_history(tenant)
    index = EventIndex(MemoryVectorStore(), HashingEmbedder(dim=64), count_tokens=_words)
    cache = CountingCache()
    ask = turn_event("ask", ASK, at=T0 + timedelta(days=1), session_id="s2", wake_id=WAKE)
    first, snap0 = _call(tenant, index, cache, 0, _append(tenant, [ask]))
    evidence = [b for b in snap0.blocks if b.kind is BlockKind.RETRIEVED]
    assert ECHO in [b.text for b in evidence], "retrieval should find the earlier turn"
    echoed = next(b.id for b in evidence if b.text == ECHO)
    assert first.ledger.row(echoed).position >= 0  # type: ignore[union-attr]

    # The model replies with the very sentence retrieval found, then calls a tool.
    reply = {"session_id": "s2", "wake_id": WAKE, "meta": {"reply": "0"}}
    at = T0 + timedelta(days=1, seconds=30)
    _append(
        tenant,
        [
            turn_event("r0-text", ECHO, at=at, role="assistant", **reply),
            tool_event(
                "tool_call",
                "r0-call",
                '{"path":"deploy/keys.toml"}',
                call_id="toolu_1",
                tool="read_file",
                at=at,
                tool_input={"path": "deploy/keys.toml"},
                **reply,
            ),
        ],
    )
    last = _append(
        tenant,
        [
            tool_event(
                "tool_result",
                "r0-result",
                "rotation = 'tuesday'\nstore = 'db-2'",
                call_id="toolu_1",
                tool="read_file",
                at=at + timedelta(seconds=1),
                session_id="s2",
                wake_id=WAKE,
            ),
        ],
    )
    second, snap1 = _call(tenant, index, cache, 1, last)

    # Call 1 begins with every content block of call 0, byte for byte.
    before, after = _blocks(first.request), _blocks(second.request)
    assert after[: len(before)] == before
    # ...so the provider reads all of call 0's write back.
    store = CacheStore()
    blocks, marks = parse_request(first.request)
    wrote = apply_cache(store, model=MODEL, blocks=blocks, breakpoints=marks, now=0.0)
    assert wrote.cache_creation_input_tokens > 0
    blocks, marks = parse_request(second.request)
    read = apply_cache(store, model=MODEL, blocks=blocks, breakpoints=marks, now=30.0)
    written = wrote.cache_read_input_tokens + wrote.cache_creation_input_tokens
    assert read.cache_read_input_tokens == written
    # Call 1 retrieved nothing: it sends call 0's evidence as the wake recorded it, once.
    assert not [b for b in snap1.blocks if b.kind is BlockKind.RETRIEVED]
    texts = [c.get("text") for m in second.request["messages"] for c in m["content"]]
    assert second.evidence_text == "" and texts.count(first.evidence_text) == 1
