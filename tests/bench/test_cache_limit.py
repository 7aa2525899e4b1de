"""The physical limit, the prefix bound and their causes, on small compiled windows."""

from __future__ import annotations

from benchmarks.cache_limit import Shortfall, call_limit, segment_ttl_seconds
from tests.compiler.factory import WAKE, base_blocks, block, snapshot, turn
from tests.compiler.helpers import compile_
from wakeful.compiler import Block, BlockKind, Ledger, Role, WindowPolicy

POLICY = WindowPolicy.default()


def _ledger(blocks: list[Block]) -> Ledger:
    return compile_(snapshot(blocks)).ledger


def _tokens(ledger: Ledger, *segments: str) -> int:
    return sum(r.tokens for r in ledger.included() if not segments or r.segment in segments)


def test_first_call_caches_nothing_and_an_identical_window_everything() -> None:
    a = _ledger(base_blocks())
    first = call_limit(None, a, 0, POLICY)
    assert (first.cacheable, first.prefix, first.cause) == (0, 0, "first_call")
    again = call_limit(a, _ledger(base_blocks()), 10, POLICY)
    assert again.cacheable == again.prefix == again.total == _tokens(a)
    assert again.cause is None and again.lost_to_layout == 0


def _without_evidence() -> list[Block]:
    """The first call's evidence is recorded with the wake, and later calls send it from
    there; a test of a later call alone leaves it out."""
    return [b for b in base_blocks() if b.kind not in (BlockKind.MEMORY, BlockKind.RETRIEVED)]


def test_only_new_tokens_are_uncacheable_when_history_grows_at_the_end() -> None:
    a = _ledger(_without_evidence())
    grown = [*_without_evidence(), turn("t-21", 21, Role.ASSISTANT, text="On it.", wake_id=WAKE)]
    grown.append(turn("t-22", 22, text="Thanks, go ahead.", wake_id=WAKE))
    b = _ledger(grown)
    limit = call_limit(a, b, 30, POLICY)
    new = sum(r.tokens for r in b.included() if r.block_id in ("t-21", "t-22"))
    assert new > 0
    assert limit.cacheable == limit.total - new
    assert limit.prefix == limit.cacheable, "appending never breaks the prefix"


def test_changed_evidence_loses_only_itself_and_names_the_cause() -> None:
    """Evidence ends the window: a change to it loses nothing that follows."""
    a = _ledger(base_blocks())
    changed = [
        b if b.id != "ret-1" else block("ret-2", BlockKind.RETRIEVED, "Runbook: add disk.", seq=8)
        for b in base_blocks()
    ]
    b = _ledger(changed)
    limit = call_limit(a, b, 30, POLICY)
    rows = b.included()
    at = next(n for n, r in enumerate(rows) if r.block_id == "ret-2")
    after = sum(r.tokens for r in rows[at + 1 :])
    assert limit.cacheable == limit.total - rows[at].tokens
    assert limit.prefix == sum(r.tokens for r in rows[:at])
    assert limit.lost_to_layout == after == 0
    assert limit.cause == "evidence:removed:retrieved (left the snapshot)"


def test_an_idle_gap_expires_all_but_the_hour_long_stable_prefix() -> None:
    a = _ledger(base_blocks())
    b = _ledger(base_blocks())
    assert segment_ttl_seconds(POLICY, "stable") == 3600
    assert segment_ttl_seconds(POLICY, "recent") == 300
    ten_minutes = call_limit(a, b, 600, POLICY)
    assert ten_minutes.cacheable == ten_minutes.prefix == _tokens(b, "stable") > 0
    two_hours = call_limit(a, b, 7200, POLICY)
    assert two_hours.cacheable == two_hours.prefix == 0


def test_shortfall_adds_up_calls_and_ranks_causes() -> None:
    a = _ledger(base_blocks())
    changed = [
        b.model_copy(update={"text": "new"}) if b.id == "sum-1" else b for b in base_blocks()
    ]
    b = _ledger(changed)
    s = Shortfall()
    for prev, cur in ((None, a), (a, b), (b, b)):
        s.add(call_limit(prev, cur, 30, POLICY))
    assert s.total == _tokens(a) + 2 * _tokens(b)
    assert 0 < s.prefix_ratio < s.limit_ratio < 1
    (cause,) = s.causes()
    assert cause["first_difference"] == "summaries:content_changed:summary"
    assert cause["calls"] == 1
    assert cause["tokens"] == s.cacheable - s.prefix
