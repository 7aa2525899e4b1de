"""Lazy event indexing and compile-time retrieval, on real Postgres."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.substrate.events import tool_event
from wakeful.compiler.blocks import Block, BlockKind, Role
from wakeful.compiler.policy import WindowPolicy
from wakeful.substrate.embedders import HashingEmbedder
from wakeful.substrate.indexing import (
    EventIndex,
    dump_hits,
    load_hits,
    retrieval_cap,
    retrieval_query,
    retrieved_blocks,
)
from wakeful.substrate.records import DecisionRecord, EventIn
from wakeful.substrate.retrieval import RetrievalHit
from wakeful.substrate.snapshot import event_block
from wakeful.substrate.store import TenantStore
from wakeful.substrate.vectors.edge import EdgeVectorStore
from wakeful.substrate.vectors.memory import MemoryVectorStore

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
EMB = HashingEmbedder(dim=64)


def words(text: str) -> int:
    return len(text.split())


def seed(ts: TenantStore, agent: str = "a1") -> list[int]:
    ts.upsert_agent(agent, model="m", provider="anthropic", instructions="i", spec={})
    turns = [
        ("s1", "user", "The deploy key rotates every Tuesday at noon."),
        ("s1", "assistant", "Noted: rotation on Tuesdays."),
        ("s1", "user", "Our database is Postgres 16 on db-2."),
        ("s2", "user", "Lunch was a pizza with olives."),
        ("s2", "assistant", "Sounds tasty."),
    ]
    events = [
        EventIn(
            step_key=f"k{i}",
            kind="turn",
            role=role,  # type: ignore[arg-type]
            text=text,
            session_id=session,
            event_time=T0 + timedelta(days=0 if session == "s1" else 3, minutes=i),
            external_id=f"D{i}",
        )
        for i, (session, role, text) in enumerate(turns)
    ]
    df = {"call_id": "c1", "tool": "df", "session_id": "s2"}
    events.append(
        tool_event("tool_call", "tool-call", "{}", at=T0 + timedelta(days=3, minutes=9), **df)
    )
    # The result's role is left unset here.
    result = "disk usage 91% on db-2"
    at = T0 + timedelta(days=3, minutes=10)
    events.append(tool_event("tool_result", "tool-result", result, at=at, role=None, **df))
    return [e.id for e in ts.append_events(agent, events)]


def _gather(
    index: EventIndex, tenant: TenantStore, query: str, *, upto: int, cap: int, **kw: Any
) -> list[RetrievalHit]:
    """What ``index`` gathers for agent a1's ``query`` from its events up to ``upto``,
    within ``cap`` tokens (``kw``: gather's other options)."""
    return index.gather(tenant, "a1", query=query, max_event_id=upto, token_cap=cap, **kw)


def test_positions_count_every_earlier_event_of_the_session(tenant: TenantStore) -> None:
    ids = seed(tenant)
    first = tenant.events_with_positions("a1", after_id=0, upto_id=ids[3], limit=10)
    rest = tenant.events_with_positions("a1", after_id=ids[3], upto_id=ids[-1], limit=10)
    positions = [(e.session_id, pos) for e, pos in first + rest]
    assert positions == [
        ("s1", 0),
        ("s1", 1),
        ("s1", 2),
        ("s2", 0),
        ("s2", 1),
        ("s2", 2),
        ("s2", 3),
    ]
    assert tenant.events_with_positions("a1", after_id=ids[-1], upto_id=10**12, limit=10) == []


def test_catch_up_indexes_turns_and_results_once_and_resumes(tenant: TenantStore) -> None:
    ids = seed(tenant)
    vectors = MemoryVectorStore()
    index = EventIndex(vectors, EMB, batch=2, count_tokens=words)
    assert index.catch_up(tenant, "a1", upto=ids[2]) == 3
    assert index.catch_up(tenant, "a1", upto=ids[-1]) == 3  # two turns and the tool result
    assert index.catch_up(tenant, "a1", upto=ids[-1]) == 0  # idempotent: nothing new
    assert vectors.count(tenant.name, "a1") == 6
    assert tenant.index_cursor("a1", index.key) == ids[-1]
    # Vectors lost (a fresh store) but the cursor kept: indexing starts over.
    fresh = EventIndex(MemoryVectorStore(), EMB, count_tokens=words)
    assert fresh.catch_up(tenant, "a1", upto=ids[-1]) == 6


def test_gather_leaves_out_raw_turns_and_events_past_the_horizon(tenant: TenantStore) -> None:
    ids = seed(tenant)
    index = EventIndex(MemoryVectorStore(), EMB, count_tokens=words)
    raw = [event_block(e) for e in tenant.events("a1") if e.id == ids[1]]

    hits = _gather(
        index, tenant, "when does the deploy key rotate", upto=ids[-1], cap=200, present=raw
    )
    found = [h.external_id for h in hits]
    assert found[0] == "D0"  # the fact, first
    assert "D1" not in found  # already in the snapshot as a raw turn
    assert all(h.session_date is not None for h in hits)

    early = _gather(index, tenant, "disk usage on db-2", upto=ids[2], cap=200)
    assert early and all(int(h.chunk_id.removeprefix("ev:")) <= ids[2] for h in early)


def test_gather_excludes_identical_text_already_present(tenant: TenantStore) -> None:
    ids = seed(tenant)
    index = EventIndex(MemoryVectorStore(), EMB, count_tokens=words)
    (same,) = [event_block(e) for e in tenant.events("a1") if e.id == ids[0]]
    # Another event with the same content: excluded by hash, not only by id.
    twin = same.model_copy(update={"id": "ev:999999", "source": "events:999999"})
    hits = _gather(index, tenant, "deploy key rotates", upto=ids[-1], cap=200, present=[twin])
    assert "D0" not in [h.external_id for h in hits]


def test_retrieved_blocks_keep_the_packing_order_and_round_trip(tenant: TenantStore) -> None:
    ids = seed(tenant)
    index = EventIndex(MemoryVectorStore(), EMB, count_tokens=words)
    hits = _gather(index, tenant, "deploy key Postgres", upto=ids[-1], cap=200)
    blocks = retrieved_blocks(hits)
    assert [b.kind for b in blocks] == [BlockKind.RETRIEVED] * len(hits)
    relevance = [b.relevance for b in blocks]
    assert relevance == sorted(relevance, reverse=True) and relevance[0] == 1.0
    stored = load_hits(dump_hits("q", 200, hits))
    assert stored.hits == tuple(hits)
    assert retrieved_blocks(stored.hits) == blocks


def test_query_adds_the_latest_user_turn_and_cap_follows_the_policy() -> None:
    def ask(text: str, seq: int) -> Block:
        return Block(
            id=f"ev:{seq}",
            kind=BlockKind.TURN,
            text=text,
            source=f"events:{seq}",
            seq=seq,
            role=Role.USER,
        )

    asks = [ask("ask one", 1), ask("ask two", 2)]
    assert retrieval_query("the goal", asks) == "the goal\nask two"
    assert retrieval_query("ask two", asks) == "ask two"
    policy = WindowPolicy.default()
    assert retrieval_cap(policy, 10**9) == policy.retrieval.max_tokens  # what a wake brings
    assert retrieval_cap(policy, 500) == 500
    unbounded = policy.model_copy(
        update={"retrieval": policy.retrieval.model_copy(update={"max_tokens": 10**9})}
    )
    room = policy.budget.input_budget * 0.6  # evidence + summaries + recent shares
    assert retrieval_cap(unbounded, 10**9) == int(room)


def test_edge_store_serves_the_same_index(tenant: TenantStore, tmp_path: Path) -> None:
    ids = seed(tenant)
    store = EdgeVectorStore(tmp_path / "shard")
    try:
        index = EventIndex(store, EMB, count_tokens=words)
        hits = _gather(index, tenant, "what database do we run", upto=ids[-1], cap=100)
        assert hits[0].external_id == "D2"
    finally:
        store.close()


def test_nothing_is_gathered_without_room(tenant: TenantStore) -> None:
    ids = seed(tenant)
    index = EventIndex(MemoryVectorStore(), EMB, count_tokens=words)
    assert _gather(index, tenant, "deploy", upto=ids[-1], cap=0) == []


def test_public_api_is_listed() -> None:
    import wakeful.substrate.indexing as mod

    assert sorted(mod.__all__) == sorted(set(mod.__all__))
    for name in mod.__all__:
        assert getattr(mod, name) is not None, name
    public = {
        n
        for n, v in vars(mod).items()
        if not n.startswith("_") and getattr(v, "__module__", "") == mod.__name__
    }
    assert public <= set(mod.__all__), public - set(mod.__all__)


def test_only_a_wakes_first_call_retrieves_and_the_next_wake_skips_what_it_recorded(
    tenant: TenantStore,
) -> None:
    """A later call of the wake sends the first call's evidence from the wake's recorded
    evidence: it retrieves nothing. The next wake's retrieval leaves out what a recorded
    evidence block in its snapshot holds while the window carries it (it is in the window
    already); evidence the window no longer carries holds nothing, so what it held may
    come back (``compiler.evidence.carried``)."""
    from wakeful.compiler.blocks import AgentProfile, Snapshot
    from wakeful.compiler.evidence import EVIDENCE_META
    from wakeful.substrate.indexing import retrieve_into

    ids = seed(tenant)
    index = EventIndex(MemoryVectorStore(), EMB, count_tokens=words)
    profile = AgentProfile(tenant=tenant.name, name="a1", model="m", instructions="i")
    snap = Snapshot(agent=profile, as_of=T0, current_wake_id="w-9", blocks=())
    policy = WindowPolicy.default()
    kw: dict[str, Any] = {"policy": policy, "max_event_id": ids[-1], "max_tokens": 200}
    first, digest = retrieve_into(index, tenant, snap, goal_text="deploy key", **kw)
    found = [b for b in first.blocks if b.kind is BlockKind.RETRIEVED]
    assert digest is not None and any(b.external_id == "D0" for b in found)
    again, none = retrieve_into(index, tenant, snap, goal_text="deploy key", call_index=1, **kw)
    assert none is None and again is snap

    recorded = Block(
        id="ev:999",
        kind=BlockKind.TURN,
        text="<evidence>...</evidence>",
        source="events:999",
        seq=999,
        role=Role.USER,
        wake_id="w-9",
        meta={EVIDENCE_META: " ".join(b.id for b in found if b.external_id == "D0")},
    )
    # A long tool result followed the evidence in its wake: rewriting it would cost more
    # than reading the evidence on, so the next wake carries the evidence.
    work = Block(
        id="ev:1000",
        kind=BlockKind.TOOL_RESULT,
        text="log line\n" * 400,
        source="events:1000",
        seq=1000,
        role=Role.USER,
        tool_call_id="t1",
        wake_id="w-9",
    )
    later = snap.model_copy(update={"current_wake_id": "w-10", "blocks": (recorded, work)})
    nxt, _ = retrieve_into(index, tenant, later, goal_text="deploy key", **kw)
    brought = [b.external_id for b in nxt.blocks if b.kind is BlockKind.RETRIEVED]
    assert brought and "D0" not in brought
    # Nothing followed it: the next wake leaves it out, and retrieval may bring D0 again.
    spent = later.model_copy(update={"blocks": (recorded,)})
    nxt, _ = retrieve_into(index, tenant, spent, goal_text="deploy key", **kw)
    assert "D0" in [b.external_id for b in nxt.blocks if b.kind is BlockKind.RETRIEVED]


def test_hits_below_the_policys_score_floor_are_not_brought(tenant: TenantStore) -> None:
    ids = seed(tenant)
    index = EventIndex(MemoryVectorStore(), EMB, count_tokens=words)
    everything = _gather(index, tenant, "deploy key rotation", upto=ids[-1], cap=10_000)
    best = _gather(index, tenant, "deploy key rotation", upto=ids[-1], cap=10_000, min_score=1.0)
    assert 0 < len([h for h in best if h.neighbour_of is None]) < len(everything)
    top = max(h.score for h in everything)
    assert all(h.score == top for h in best if h.neighbour_of is None)


def test_gather_leaves_out_what_a_summary_in_the_window_replaced(tenant: TenantStore) -> None:
    """Consolidation retired the span: a window holding the summary never gets the raw
    turns it stands for back through retrieval (the turns around a hit neither)."""
    ids = seed(tenant)
    index = EventIndex(MemoryVectorStore(), EMB, count_tokens=words)
    query = "when does the deploy key rotate on Tuesday"
    before = index.gather(tenant, "a1", query=query, max_event_id=ids[-1], token_cap=200)
    assert {"D0", "D1"} <= {h.external_id for h in before}
    summary = Block(
        id="summary:1",
        kind=BlockKind.SUMMARY,
        text="Session 1: key rotation and the database were discussed.",
        source="summaries:1",
        meta={"level": "1", "span": f"{ids[0]}-{ids[2]}"},
    )
    after = index.gather(
        tenant, "a1", query=query, max_event_id=ids[-1], token_cap=200, present=[summary]
    )
    found = [int(h.chunk_id.removeprefix("ev:")) for h in after]
    assert found and not [e for e in found if ids[0] <= e <= ids[2]]


def test_a_retrieved_decision_that_no_longer_holds_says_what_holds_now(
    tenant: TenantStore, tmp_path: Path
) -> None:
    """On the Qdrant Edge engine and Postgres: a turn that stated a decision since
    superseded, a turn quoting it and the tool result naming its id come back marked with
    the decision that holds now; a retired one is marked retired; the rest is as stored."""
    tenant.upsert_agent("a1", model="m", provider="anthropic", instructions="i", spec={})
    said = [
        ("user", "Decision: use Postgres 17 for the orders database, starting Monday."),
        ("assistant", "Understood, I will use Postgres 17 for the orders database."),
        ("user", "The orders database backups run nightly at 02:00."),
        ("user", "Freeze the orders database schema until the audit ends."),
    ]
    stored = tenant.append_events(
        "a1",
        [
            EventIn(
                step_key=f"k{i}",
                kind="turn",
                role=role,  # type: ignore[arg-type]
                text=text,
                session_id="s1",
                event_time=T0 + timedelta(minutes=i),
            )
            for i, (role, text) in enumerate(said)
        ]
        + [
            tool_event(
                "tool_result",
                "r",
                "Recorded DEC-90 under key 'orders.db'.",
                call_id="c9",
                tool="remember_decision",
                at=T0 + timedelta(minutes=9),
                session_id="s1",
            )
        ],
    )
    first, _, plain, freeze, result = stored
    tenant.register_decision(
        DecisionRecord(
            decision_id="D-1",
            agent="a1",
            text="Use Postgres 17 for the orders database.",
            source_event=first.id,
        )
    )
    tenant.record_decision(
        "a1", key="orders.db", text="Use Postgres 17.", source="tool", decision_id="DEC-90"
    )
    now = tenant.supersede_with("a1", "D-1", text="Use Postgres 18 for the orders database.")
    tenant.record_decision("a1", key="orders.db", text="Use Postgres 18.")  # supersedes DEC-90
    tenant.register_decision(
        DecisionRecord(
            decision_id="D-2",
            agent="a1",
            text="Freeze the orders database schema until the audit ends.",
            source_event=freeze.id,
        )
    )
    tenant.retire_decision("a1", "D-2", by="person")
    vectors = EdgeVectorStore(tmp_path / "shard")
    try:
        index = EventIndex(vectors, EMB, count_tokens=words)
        hits = _gather(index, tenant, "orders database Postgres", upto=result.id, cap=500)
    finally:
        vectors.close()
    by_event = {h.chunk_id: h for h in hits}
    holds = f"superseded; now {now.decision_id}: Use Postgres 18 for the orders database.]"
    for e in stored[:2]:  # the source turn, and the turn that quotes it
        h = by_event[f"ev:{e.id}"]
        marks, _, text = h.text.rpartition("\n")
        assert "[decision D-1 no longer holds: " + holds in marks.splitlines(), h.text
        # It says "use Postgres 17" too, which DEC-90 on orders.db decided.
        assert "[decision DEC-90 (orders.db) no longer holds" in marks
        assert text == e.text and h.tokens == words(h.text)
    recorded = by_event[f"ev:{result.id}"].text
    assert recorded.startswith("[decision DEC-90 (orders.db) no longer holds: superseded; now P-2")
    assert by_event[f"ev:{freeze.id}"].text.startswith("[decision D-2 no longer holds: retired]")
    assert by_event[f"ev:{plain.id}"].text == plain.text  # states no decision: as stored
