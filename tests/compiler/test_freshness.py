from __future__ import annotations

from datetime import timedelta

from wakeful.compiler import BlockKind, load_policy

from .factory import NOW, base_blocks, block, snapshot
from .helpers import compile_

STALE = NOW - timedelta(minutes=1)


def _blocks() -> list:
    return [
        *base_blocks(),
        block("old-mem", BlockKind.MEMORY, "cache is cold", seq=30, stale_after=STALE),
        block(
            "old-dec",
            BlockKind.LOAD_BEARING,
            "D-5: freeze deploys",
            seq=31,
            load_bearing=True,
            stale_after=STALE,
        ),
    ]


def test_stale_blocks_are_excluded_by_default_but_load_bearing_stays() -> None:
    w = compile_(snapshot(_blocks()))
    row = w.ledger.row("old-mem")
    assert row is not None and row.reason == "stale" and row.rule == "staleness.mode"
    dec = w.ledger.row("old-dec")
    assert dec is not None and dec.position >= 0 and "stale" in dec.detail


def test_flag_mode_keeps_and_marks_stale_evidence() -> None:
    w = compile_(snapshot(_blocks()), load_policy("[staleness]\nmode = 'flag'\n"))
    row = w.ledger.row("old-mem")
    assert row is not None and row.position >= 0 and "stale" in row.detail
    texts = [c.get("text", "") for m in w.request["messages"] for c in m["content"]]
    assert any('id="old-mem" source="test:old-mem" stale="true"' in t for t in texts)


def test_not_yet_stale_is_kept_and_max_age_applies_per_kind() -> None:
    w = compile_(snapshot(_blocks()), now=STALE - timedelta(seconds=1))
    assert w.ledger.row("old-mem").position >= 0  # type: ignore[union-attr]
    aged = load_policy("[staleness.max_age_hours]\nmemory = 24\n")
    w2 = compile_(snapshot(_blocks()), aged)
    assert w2.ledger.row("mem-1").reason == "stale"  # captured two days ago
