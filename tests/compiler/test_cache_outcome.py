"""The cache-miss taxonomy: each class from the provider's counters, the ledgers and the
idle time, on real compiled windows."""

from __future__ import annotations

from datetime import timedelta

from wakeful.compiler import BlockKind, Role
from wakeful.compiler.cache_outcome import CacheClass, classify
from wakeful.compiler.ledger import Ledger

from .factory import NOW, base_blocks, block, snapshot, turn
from .helpers import compile_


def _ledgers() -> tuple[Ledger, Ledger]:
    """A call, and the next wake's call: the same history plus the first wake's reply."""
    first = base_blocks()
    reply = turn("t-21", 21, Role.ASSISTANT, text="Rotated the logs on db-2.", wake_id="wake-7")
    ask = turn("t-22", 22, text="Is the disk fine now?", wake_id="wake-8")
    a = compile_(snapshot(first)).ledger
    b = compile_(snapshot([*first, reply, ask], wake="wake-8")).ledger
    return a, b


def test_a_read_of_the_shared_prefix_is_a_hit() -> None:
    a, b = _ledgers()
    probe = classify(a, NOW, b, NOW + timedelta(seconds=30), read_tokens=0, min_cacheable=0)
    could = probe.could_read_tokens
    assert could > 0 and probe.through is not None
    hit = classify(a, NOW, b, NOW + timedelta(seconds=30), read_tokens=could, min_cacheable=0)
    assert hit.cache_class is CacheClass.HIT


def test_nothing_read_after_the_ttl_is_an_expiry_and_within_it_an_eviction() -> None:
    a, b = _ledgers()
    late = classify(a, NOW, b, NOW + timedelta(seconds=4000), read_tokens=0, min_cacheable=0)
    assert late.cache_class is CacheClass.TTL_EXPIRED
    assert late.idle_seconds == 4000 and late.ttl_seconds is not None
    assert "idle 4000 s" in late.detail
    soon = classify(a, NOW, b, NOW + timedelta(seconds=20), read_tokens=0, min_cacheable=0)
    assert soon.cache_class is CacheClass.PROVIDER_EVICTION
    assert "clock is ahead" in soon.detail


def test_a_changed_rule_is_a_changed_prefix_naming_the_block() -> None:
    blocks = base_blocks()
    a = compile_(snapshot(blocks)).ledger
    changed = [
        block("rule-1", BlockKind.SYSTEM_RULE, "Never page a human before 09:00.", seq=1)
        if b.id == "rule-1"
        else b
        for b in blocks
    ]
    b = compile_(snapshot(changed)).ledger
    out = classify(a, NOW, b, NOW + timedelta(seconds=10), read_tokens=0, min_cacheable=0)
    assert out.cache_class is CacheClass.PREFIX_CHANGED
    assert out.difference is not None and out.difference.block_id == "rule-1"
    assert "rule-1" in out.detail


def test_the_first_call_is_cold_and_a_short_prefix_is_below_the_minimum() -> None:
    a, b = _ledgers()
    cold = classify(None, None, a, NOW, read_tokens=0, min_cacheable=1024)
    assert cold.cache_class is CacheClass.COLD_START
    short = classify(a, NOW, b, NOW + timedelta(seconds=5), read_tokens=0, min_cacheable=10**6)
    assert short.cache_class is CacheClass.BELOW_MINIMUM
    assert "minimum of 1000000" in short.detail
