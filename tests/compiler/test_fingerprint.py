"""A block its producer vouches for (``Block.fingerprint``) is recognised by id and
fingerprint: newly built, it costs no facts and no comparison of its text; with another
fingerprint it is new; and a block the compiler edits carries no fingerprint on."""

from __future__ import annotations

from wakeful.compiler import (
    Allocations,
    Block,
    Budget,
    CountingCache,
    EstimatingCounter,
    Snapshot,
    WindowPolicy,
    compile_window,
)

from .factory import AGENT, NOW, WAKE, goal, turn

POLICY = WindowPolicy()


def _snapshot(blocks: list[Block]) -> Snapshot:
    return Snapshot(agent=AGENT, as_of=NOW, current_wake_id=WAKE, blocks=tuple(blocks))


def _history(fingerprint: str = "v1", text: str = "The deploy of web-3 failed.") -> list[Block]:
    return [
        turn("ev:1", 1, text=text, fingerprint=fingerprint),
        turn("ev:2", 2, text="Rolled back.", fingerprint="v2"),
        turn("ask", 3, text="What failed?", wake_id=WAKE),
    ]


def _compile(blocks: list[Block], cache: CountingCache) -> str:
    window = compile_window(
        _snapshot(blocks), goal(), POLICY, NOW, counter=EstimatingCounter(), cache=cache
    )
    return window.request_json


def test_a_newly_built_block_with_its_fingerprint_makes_no_facts() -> None:
    cache = CountingCache()
    first = _compile(_history(), cache)
    made = cache.work.facts_made
    again = _compile(_history(), cache)  # new objects, equal, vouched for
    assert again == first
    assert cache.work.facts_made == made


def test_another_fingerprint_is_another_block() -> None:
    """The producer says the row changed: its facts are made again and the window shows
    the new text (a stale match would show the old)."""
    cache = CountingCache()
    _compile(_history(), cache)
    made = cache.work.facts_made
    changed = _compile(_history(fingerprint="v1b", text="The deploy of web-4 failed."), cache)
    assert cache.work.facts_made == made + 1
    assert "web-4" in changed and "web-3" not in changed
    assert changed == _compile(
        _history(fingerprint="v1b", text="The deploy of web-4 failed."), CountingCache()
    )


def test_a_block_without_a_fingerprint_is_still_matched_by_value() -> None:
    cache = CountingCache()
    plain = [b.model_copy(update={"fingerprint": None}) for b in _history()]
    _compile(plain, cache)
    made = cache.work.facts_made
    _compile([b.model_copy(update={"fingerprint": None}) for b in _history()], cache)
    assert cache.work.facts_made == made
    edited = [b.model_copy(update={"fingerprint": None}) for b in _history(text="Other text.")]
    out = _compile(edited, cache)
    assert cache.work.facts_made == made + 1 and "Other text." in out


def test_an_edited_block_carries_no_fingerprint() -> None:
    """``Block.edited`` (what the oversize pass, clearing and the compile activity use)
    drops the producer's fingerprint: it vouched for the fields it built, not these."""
    b = _history()[0]
    assert b.fingerprint == "v1"
    assert b.edited(text="shown in part").fingerprint is None


def test_an_oversized_vouched_turn_is_shown_in_part_compile_after_compile() -> None:
    """The oversize pass shows a long turn head and tail; the shortened copy must not be
    taken for the vouched original on the next compile (same id, same fingerprint)."""
    small = WindowPolicy(
        budget=Budget(context_limit=8_000, output_reserve=1_000, allocations=Allocations())
    )
    long_text = "word " * 20_000
    blocks = [turn("ev:1", 1, text=long_text, fingerprint="big"), *_history()[1:]]
    cache = CountingCache()
    windows = [
        compile_window(
            _snapshot([b.model_copy() for b in blocks]),
            goal(),
            small,
            NOW,
            counter=EstimatingCounter(),
            cache=cache,
        )
        for _ in range(3)
    ]
    cold = compile_window(
        _snapshot(blocks), goal(), small, NOW, counter=EstimatingCounter(), cache=CountingCache()
    )
    assert all(w.request_json == cold.request_json for w in windows)
    (row,) = [r for r in cold.ledger.rows if r.block_id == "ev:1"]
    assert row.status == "included", row
    assert "word word" in cold.request_json and len(cold.request_json) < len(long_text) // 2
