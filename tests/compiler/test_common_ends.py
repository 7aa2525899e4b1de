"""The fast common ends of two facts lists agree with the plain identity scan (lists long
enough to span several of the stretches ``shared_prefix`` compares at once)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress, count
from operator import is_not
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from wakeful.compiler.lookup import common_facts_ends


def common_ends(a: Sequence[Any], b: Sequence[Any]) -> tuple[int, int]:
    """The reference: leading and trailing items ``a`` and ``b`` share, compared one by one
    by identity (the two never overlap in the shorter sequence)."""
    n = min(len(a), len(b))
    head = next(compress(count(), map(is_not, a, b)), n)
    tail = next(compress(count(), map(is_not, reversed(a), reversed(b))), n)
    return head, min(tail, n - head)


class _Item:  # compared by identity, as facts are
    pass


POOL = [_Item() for _ in range(300)]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 299), max_size=1600),
    st.integers(0, 1600),
    st.integers(0, 400),
    st.lists(st.integers(0, 299), max_size=200),
)
def test_fast_common_ends_equal_the_identity_scan(
    base: list[int], cut_from: int, cut_len: int, inserted: list[int]
) -> None:
    a = [POOL[i] for i in base]
    b = list(a)
    b[cut_from : cut_from + cut_len] = [POOL[i] for i in inserted]
    assert common_facts_ends(a, b) == common_ends(a, b)  # type: ignore[arg-type]
    assert common_facts_ends(b, a) == common_ends(b, a)  # type: ignore[arg-type]
