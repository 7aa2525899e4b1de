"""Streams read candidates lazily, best first: exactly sorted order, whatever was read before."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from wakeful.compiler.streams import FACTS, Entry, Stream, ranked


class Head:
    """Stands in for a unit head's facts: only identity matters to a stream."""

    def __init__(self, n: int) -> None:
        self.n = n


def entry(head: Head, key: float, seq: int, serial: int) -> Entry:
    return (-3, -key, -seq, f"id-{head.n}", 0, serial, head, 10)  # type: ignore[return-value]


operations = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 30), st.floats(-50, 50), st.integers(0, 400)),
        st.tuples(st.just("read"), st.integers(0, 40), st.sets(st.integers(0, 30), max_size=5)),
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(operations)
def test_reads_are_sorted_live_entries_minus_the_skipped(ops: list[Any]) -> None:
    stream = Stream()
    live: dict[Any, Entry] = {}
    heads = [Head(n) for n in range(31)]
    serial = 0
    for op in ops:
        if op[0] == "add":
            _, n, key, seq = op
            serial += 1
            new = entry(heads[n], key, seq, serial)
            replaced = heads[n] in live
            live[heads[n]] = new
            if replaced:
                stream.retire(live)  # the old entry is dead; may compact
            stream.add(new)
            continue
        _, take, skipped = op
        skip = {heads[n] for n in skipped}
        expected = sorted(e for e in live.values() if e[FACTS] not in skip)[:take]
        got = []
        for e in ranked(stream, live, skip):
            if len(got) == take:
                break
            got.append(e)
        assert got == expected


def test_a_read_stops_at_the_newest_candidates_when_keys_grow_with_recency() -> None:
    stream = Stream()
    live: dict[Any, Entry] = {}
    for n in range(10_000):
        head = Head(n)
        live[head] = entry(head, n / 50 + (n % 7) * 0.01, n, n)
        stream.add(live[head])
    best = next(ranked(stream, live, set()))
    assert best[FACTS].n == 9_999
    assert stream.next > 9_900  # read only a handful from the end
    # a second read replays what the first found, and goes on from there
    got = [e for _, e in zip(range(50), ranked(stream, live, set()), strict=False)]
    assert got == sorted(live.values())[:50]


def test_replaced_entries_are_compacted_away_without_changing_the_order() -> None:
    stream = Stream()
    live: dict[Any, Entry] = {}
    heads = [Head(n) for n in range(8)]
    for serial in range(400):
        head = heads[serial % 8]
        live[head] = entry(head, (serial * 37) % 101, serial, serial)
        if serial >= 8:
            stream.retire(live)
        stream.add(live[head])
        if serial % 50 == 0:
            assert list(ranked(stream, live, set())) == sorted(live.values())
    assert len(stream.entries) < 200  # dead entries were dropped
    assert list(ranked(stream, live, {heads[3]})) == sorted(
        e for h, e in live.items() if h is not heads[3]
    )
