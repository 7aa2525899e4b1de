"""Evidence pays for its place: retrieved hits are admitted by their worth in this window,
and an ended wake's evidence is carried on only while that is cheaper than fetching it.

Retrieval's hits carry their packing rank (``RetrievalHit.to_block``) and relevance along
the packing order; the blocks here are made the same way.
"""

from __future__ import annotations

from typing import Any

from wakeful.compiler import Block, BlockKind, Role, WindowPolicy
from wakeful.compiler.evidence import EVIDENCE_META
from wakeful.compiler.overlap import is_question, overlap, terms

from .factory import WAKE, block, goal, snapshot, turn
from .helpers import compile_

HITS = [
    # (chunk, text, neighbour of)
    ("ev:1", "Maria adopted a rescue dog called Shadow last spring.", None),
    ("ev:2", "That is wonderful, how is Shadow settling in?", "ev:1"),
    ("ev:3", "I painted the fence blue over the weekend.", None),
    ("ev:4", "We went to the lake and the weather was lovely.", None),
]


def _hits() -> list[Block]:
    n = len(HITS)
    out = []
    for i, (chunk, text, parent) in enumerate(HITS):
        meta = {"rank": str(i + 1), "score": "0.016", "chunk_kind": "turn"}
        if parent is not None:
            meta["neighbour_of"] = parent
        out.append(
            block(
                f"retrieved:{chunk}",
                BlockKind.RETRIEVED,
                text,
                source=f"chunk:{chunk}",
                seq=i + 1,
                relevance=(n - i) / n,
                meta=meta,
            )
        )
    return out


def _wake(ask: str, extra: list[Block] | None = None) -> list[Block]:
    return [*(extra or []), turn("ask", 50, text=ask, wake_id=WAKE), *_hits()]


def _rows(policy: WindowPolicy | None = None, **kw: Any) -> dict[str, Any]:
    ask = kw.pop("ask")
    w = compile_(snapshot(_wake(ask, kw.pop("extra", None))), policy, goal=goal(ask))
    return {r.block_id: r for r in w.ledger.rows}


def test_overlap_counts_the_asks_content_words() -> None:
    ask = terms("What did Maria call her rescue dog?")
    assert ask == {"maria", "call", "her", "rescue", "dog"} - {"her"}
    assert overlap(ask, "Maria adopted a rescue dog called Shadow.") == 1.0
    assert overlap(ask, "I painted the fence blue.") == 0.0
    assert is_question("What did Maria call her dog?") and not is_question("I went out.")


def test_a_question_brings_its_hits_and_each_row_says_why() -> None:
    rows = _rows(ask="What did Maria call her rescue dog?")
    for chunk, _, _ in HITS:
        assert rows[f"retrieved:{chunk}"].position >= 0
    first = rows["retrieved:ev:1"]
    assert "of the words of a question" in first.detail and "tokens as input" in first.detail
    assert "neighbour of ev:1" in rows["retrieved:ev:2"].detail


def test_a_statement_brings_only_what_shares_its_words_and_their_neighbours() -> None:
    rows = _rows(ask="Maria says her rescue dog Shadow loves the beach.")
    assert rows["retrieved:ev:1"].position >= 0  # shares most of the statement's words
    assert rows["retrieved:ev:2"].position >= 0  # follows its hit
    for chunk in ("ev:3", "ev:4"):
        row = rows[f"retrieved:{chunk}"]
        assert row.position < 0 and row.reason == "not_worth_its_tokens"
        assert row.rule == "retrieval.statement_min_overlap" and "statement" in row.detail


def test_a_statement_brings_at_most_its_cap() -> None:
    policy = WindowPolicy.default()
    tight = policy.model_copy(
        update={
            "retrieval": policy.retrieval.model_copy(
                update={"statement_max_tokens": 5, "statement_min_overlap": 0.0}
            )
        }
    )
    rows = _rows(tight, ask="Maria says her rescue dog Shadow loves the beach.")
    hits = [f"retrieved:{chunk}" for chunk, _, parent in HITS if parent is None]
    assert all(rows[h].position < 0 for h in hits)
    assert all(rows[h].rule == "retrieval.statement_max_tokens" for h in hits)
    assert "neighbour of ev:1, which is not admitted" in rows["retrieved:ev:2"].detail


def _ended_wake(after: list[Block]) -> list[Block]:
    """An ended wake (w-1) whose recorded evidence holds ev:1, then ``after`` in it."""
    recorded = turn(
        "ev:90",
        10,
        text="<evidence>Maria adopted a rescue dog called Shadow last spring.</evidence>",
        wake_id="w-1",
        meta={EVIDENCE_META: "retrieved:ev:1"},
    )
    return [turn("ev:89", 9, text="Tell me about Maria.", wake_id="w-1"), recorded, *after]


def test_an_ended_wakes_evidence_followed_by_a_short_reply_is_not_carried() -> None:
    reply = turn("ev:91", 11, Role.ASSISTANT, text="She has a dog.", wake_id="w-1")
    rows = _rows(ask="What did Maria call her rescue dog?", extra=_ended_wake([reply]))
    row = rows["ev:90"]
    assert row.position < 0 and row.reason == "evidence_spent"
    assert row.rule == "retrieval.keep_for_calls" and "w-1" in row.detail
    # It holds nothing now: the hit it held is a candidate again, and admitted.
    assert rows["retrieved:ev:1"].position >= 0
    assert rows["ev:91"].position >= 0  # the rest of that wake stays


def test_an_ended_wakes_evidence_followed_by_long_tool_traffic_is_carried() -> None:
    call = block(
        "ev:91",
        BlockKind.TOOL_CALL,
        "",
        seq=11,
        role=Role.ASSISTANT,
        tool_call_id="t1",
        tool_name="grep",
        tool_input={"q": "x"},
        wake_id="w-1",
    )
    result = block(
        "ev:92",
        BlockKind.TOOL_RESULT,
        "line of log\n" * 200,
        seq=12,
        role=Role.USER,
        tool_call_id="t1",
        tool_name="grep",
        wake_id="w-1",
    )
    rows = _rows(ask="What did Maria call her rescue dog?", extra=_ended_wake([call, result]))
    assert rows["ev:90"].position >= 0
    assert "retrieved:ev:1" not in rows  # held by the evidence sent in place


def test_keep_for_calls_zero_carries_every_wakes_evidence() -> None:
    policy = WindowPolicy.default()
    always = policy.model_copy(
        update={"retrieval": policy.retrieval.model_copy(update={"keep_for_calls": 0})}
    )
    reply = turn("ev:91", 11, Role.ASSISTANT, text="She has a dog.", wake_id="w-1")
    rows = _rows(always, ask="What did Maria call her rescue dog?", extra=_ended_wake([reply]))
    assert rows["ev:90"].position >= 0
