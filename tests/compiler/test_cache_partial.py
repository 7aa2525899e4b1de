"""A call that reads a shorter cached prefix whole, because a block inside the longer one
the previous call cached was rewritten, is a changed prefix, not a hit."""

from __future__ import annotations

from datetime import timedelta

from wakeful.compiler import Role
from wakeful.compiler.cache_outcome import CacheClass, PrefixCause, classify
from wakeful.compiler.ledger import Ledger

from .factory import NOW, base_blocks, snapshot, turn
from .helpers import compile_


def _next_wake(rewrite: bool) -> tuple[Ledger, Ledger]:
    """A call, and the next wake's call over the same history (``rewrite``: with turn t-11,
    inside the previous call's history entry, rewritten)."""
    first = base_blocks()
    reply = turn("t-21", 21, Role.ASSISTANT, text="Rotated the logs on db-2.", wake_id="wake-7")
    ask = turn("t-22", 22, text="Is the disk fine now?", wake_id="wake-8")
    later = [
        turn("t-11", 11, Role.ASSISTANT, text="[cleared: the disk report]", wake_id="wake-6")
        if rewrite and b.id == "t-11"
        else b
        for b in first
    ]
    a = compile_(snapshot(first)).ledger
    b = compile_(snapshot([*later, reply, ask], wake="wake-8")).ledger
    return a, b


def _entry(ledger: Ledger, name: str) -> int:
    return next(bp.prefix_tokens for bp in ledger.breakpoints if bp.name == name)


def test_reading_only_the_prefix_before_a_rewritten_turn_is_a_changed_prefix() -> None:
    a, b = _next_wake(rewrite=True)
    at = NOW + timedelta(seconds=30)
    could = classify(a, NOW, b, at, read_tokens=0, min_cacheable=0).could_read_tokens
    assert 0 < could < _entry(a, "history")
    out = classify(a, NOW, b, at, read_tokens=could, min_cacheable=0)
    assert out.cache_class is CacheClass.PREFIX_CHANGED
    assert out.cause is PrefixCause.CONTENT
    assert out.difference is not None and out.difference.block_id == "t-11"
    assert f"of the {_entry(a, 'history')} tokens the previous call cached" in out.detail
    assert "t-11" in out.detail


def test_the_same_read_without_a_rewrite_is_a_hit() -> None:
    a, b = _next_wake(rewrite=False)
    at = NOW + timedelta(seconds=30)
    could = classify(a, NOW, b, at, read_tokens=0, min_cacheable=0).could_read_tokens
    assert classify(a, NOW, b, at, read_tokens=could, min_cacheable=0).cache_class is (
        CacheClass.HIT
    )
    history = _entry(a, "history")
    whole = classify(a, NOW, b, at, read_tokens=history, min_cacheable=0)
    assert whole.cache_class is CacheClass.HIT
