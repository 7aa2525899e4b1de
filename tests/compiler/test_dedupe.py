from __future__ import annotations

from datetime import timedelta
from typing import Any

from wakeful.compiler import BlockKind

from .factory import NOW, base_blocks, block, snapshot
from .helpers import compile_


def test_exact_duplicate_keeps_the_most_stable_copy() -> None:
    dup = block("ret-dup", BlockKind.RETRIEVED, "Never page a human before 08:00.", seq=9)
    w = compile_(snapshot([*base_blocks(), dup]))
    row = w.ledger.row("ret-dup")
    assert row is not None and row.reason == "duplicate" and "rule-1" in row.detail
    assert "earlier in the window, in stable" in row.detail  # the rule that picked rule-1
    assert row.rule == "dedupe.content" and row.tokens_freed > 0


def test_freshest_authoritative_source_wins_a_supersession_key() -> None:
    old = block(
        "f-old",
        BlockKind.MEMORY,
        "db-2 has 1 TB",
        seq=30,
        supersession_key="db2-disk",
        captured_at=NOW - timedelta(days=3),
        authoritative=True,
    )
    newer = block(
        "f-new",
        BlockKind.MEMORY,
        "db-2 has 4 TB",
        seq=31,
        supersession_key="db2-disk",
        captured_at=NOW - timedelta(days=1),
    )
    newest_auth = block(
        "f-auth",
        BlockKind.RETRIEVED,
        "db-2 has 2 TB",
        seq=29,
        supersession_key="db2-disk",
        captured_at=NOW - timedelta(hours=1),
        authoritative=True,
    )
    w = compile_(snapshot([*base_blocks(), old, newer, newest_auth]))
    assert w.ledger.row("f-auth").position >= 0  # type: ignore[union-attr]
    for loser in ("f-old", "f-new"):
        row = w.ledger.row(loser)
        assert row is not None and row.reason == "superseded" and "f-auth" in row.detail


def test_load_bearing_only_yields_to_load_bearing() -> None:
    lb = block(
        "D-9",
        BlockKind.LOAD_BEARING,
        "D-9: keep v1 API",
        seq=30,
        load_bearing=True,
        supersession_key="api",
    )
    plain = block("m-api", BlockKind.MEMORY, "v2 API is fine", seq=40, supersession_key="api")
    w = compile_(snapshot([*base_blocks(), lb, plain]))
    assert w.ledger.row("D-9").position >= 0  # type: ignore[union-attr]
    assert w.ledger.row("m-api").reason == "superseded"  # type: ignore[union-attr]
    newer_lb = block(
        "D-10",
        BlockKind.LOAD_BEARING,
        "D-10: v2 API",
        seq=41,
        load_bearing=True,
        supersession_key="api",
    )
    w2 = compile_(snapshot([*base_blocks(), lb, newer_lb]))
    assert w2.ledger.row("D-9").reason == "superseded"  # type: ignore[union-attr]


def test_identical_turns_are_two_events_not_duplicates() -> None:
    from .factory import turn

    blocks = [*base_blocks(), turn("again-1", 15, text="ok"), turn("again-2", 16, text="ok")]
    w = compile_(snapshot(blocks))
    assert w.ledger.row("again-1").position >= 0  # type: ignore[union-attr]
    assert w.ledger.row("again-2").position >= 0  # type: ignore[union-attr]


def test_recorded_evidence_keeps_the_first_calls_bytes_when_the_wake_repeats_it() -> None:
    """Evidence goes after the current wake's content, and the next call of the wake sends
    it from the wake's recorded evidence (a user turn listing the blocks it holds): the
    memory and retrieved chunk it holds are not sent again, a reply that repeats a retrieved
    turn edits nothing before it, and call 1 begins with call 0's bytes."""
    from wakeful.compiler import CountingCache, Role
    from wakeful.compiler.evidence import EVIDENCE_META

    from .factory import pair, turn

    echo = "Runbook: rotate logs."  # the text of base_blocks()' ret-1
    call0 = base_blocks()
    cache = CountingCache()
    first = compile_(snapshot(call0), cache=cache)
    assert first.evidence_blocks == ("mem-1", "ret-1") or set(first.evidence_blocks) == {
        "mem-1",
        "ret-1",
    }
    assert first.ledger.decisions["evidence.placement"].startswith("with_wake")
    ask = max((b for b in call0 if b.wake_id == "wake-7"), key=lambda b: b.seq)
    recorded = turn(
        "evidence-7",
        ask.seq + 1,
        text=first.evidence_text,
        wake_id="wake-7",
        meta={EVIDENCE_META: " ".join(first.evidence_blocks)},
    )
    reply = turn("reply", 21, Role.ASSISTANT, text=echo, wake_id="wake-7")
    call, result = pair("c-22", 22, wake="wake-7")
    second = compile_(snapshot([*call0, recorded, reply, call, result]), cache=cache)
    assert second.evidence_text == ""  # nothing new to bring: the recorded one holds it all
    assert second.request_json.count("db-2 disks are 2 TB.") == 1

    def content(w: Any) -> list[dict[str, Any]]:  # in cache order, markers aside
        out = [*w.request["system"]]
        for message in w.request["messages"]:
            out += [{"role": message["role"], **c} for c in message["content"]]
        return [{k: v for k, v in c.items() if k != "cache_control"} for c in out]

    before = content(first)
    assert content(second)[: len(before)] == before


def test_recorded_evidence_holds_a_block_only_while_its_content_is_as_recorded() -> None:
    """A block the wake's recorded evidence lists with its content hash is left out while
    its content is the same; one whose content changed since (a layer keeping its id: a
    ``git status``) is evidence again, sent as it is now after the wake's content, with
    the stable prefix and the earlier bytes unchanged. Evidence recorded with ids only
    holds its blocks by id, as it always did."""
    from wakeful.compiler import Role
    from wakeful.compiler.evidence import EVIDENCE_HASHES_META, EVIDENCE_META

    from .factory import turn

    call0 = base_blocks()
    first = compile_(snapshot(call0))
    assert len(first.evidence_hashes) == len(first.evidence_blocks) > 0
    ask = max((b for b in call0 if b.wake_id == "wake-7"), key=lambda b: b.seq)

    def recorded(hashes: bool) -> Any:
        meta = {EVIDENCE_META: " ".join(first.evidence_blocks)}
        if hashes:
            meta[EVIDENCE_HASHES_META] = " ".join(first.evidence_hashes)
        return turn(
            "evidence-7", ask.seq + 1, text=first.evidence_text, wake_id="wake-7", meta=meta
        )

    reply = turn("reply", 21, Role.ASSISTANT, text="Looking.", wake_id="wake-7")
    same = compile_(snapshot([*call0, recorded(True), reply]))
    assert same.evidence_text == ""  # as recorded: nothing to send again
    changed = [
        b.model_copy(update={"text": "db-2 disks are 4 TB now."}) if b.id == "mem-1" else b
        for b in call0
    ]
    fresh = compile_(snapshot([*changed, recorded(True), reply]))
    assert fresh.evidence_blocks == ("mem-1",)
    assert "db-2 disks are 4 TB now." in fresh.evidence_text
    assert fresh.stable_prefix_hash == first.stable_prefix_hash == same.stable_prefix_hash
    assert fresh.request_json.index("Looking.") < fresh.request_json.index("4 TB now.")
    older = compile_(snapshot([*changed, recorded(False), reply]))
    assert older.evidence_text == "" and "4 TB now." not in older.request_json
