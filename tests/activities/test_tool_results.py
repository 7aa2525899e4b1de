"""Shortening a tool result and paging through it, within characters and within tokens."""

from __future__ import annotations

import re

from wakeful.tokenizers import BpeCounter
from wakeful.tool_results import MIN_RESULT_TOKENS, page, result_token_cap, shorten

# Dense text: digits and punctuation take about a token per two characters, so a cap in
# characters alone lets through far more tokens than a small window holds.
DENSE = "".join(f"{n:05d}|{n * 7919 % 100_003:06d};" for n in range(20_000))
COUNTER = BpeCounter()


def test_a_result_is_cut_to_its_token_cap_head_and_tail_with_the_note_between() -> None:
    cap = 1_500
    shown = shorten(DENSE, 40_000, "h1", max_tokens=cap, count=COUNTER.count)
    assert COUNTER.count(shown) <= cap
    head, note, tail = re.split(r"\n\n(\[\.\.\. .*\])\n\n", shown)
    assert DENSE.startswith(head) and DENSE.endswith(tail)
    assert len(head) > 2 * len(tail) > 0  # three quarters of the room go to the head
    assert f'read_result(handle="h1", offset={len(head)})' in note


def test_the_character_cap_still_binds_when_it_is_the_smaller() -> None:
    prose = "the checkout service answered in time " * 5_000
    by_chars = shorten(prose, 4_000, "h2")
    assert shorten(prose, 4_000, "h2", max_tokens=100_000, count=COUNTER.count) == by_chars
    short = "a few words"
    assert shorten(short, 4_000, "h3", max_tokens=10, count=COUNTER.count) == short


def test_a_text_within_the_characters_but_over_the_tokens_is_cut_too() -> None:
    text = DENSE[:30_000]
    shown = shorten(text, 40_000, "h4", max_tokens=800, count=COUNTER.count)
    assert COUNTER.count(shown) <= 800 and "omitted" in shown


def test_a_page_keeps_within_the_token_cap_and_says_where_the_next_starts() -> None:
    one = page(DENSE, 1_000, max_tokens=500, count=COUNTER.count)
    parts = re.fullmatch(
        r"(.*)\n\n\[characters 1,000-([\d,]+) of .*; next: offset=\d+\]", one, re.S
    )
    assert parts is not None
    chunk, end = parts.groups()
    assert COUNTER.count(one) <= 500 and DENSE[1_000:].startswith(chunk)
    assert int(end.replace(",", "")) == 1_000 + len(chunk)
    assert page(DENSE, 1_000) == page(DENSE, 1_000, max_tokens=100_000, count=COUNTER.count)


def test_the_cap_is_a_share_of_the_window_split_between_a_replys_calls() -> None:
    assert result_token_cap(6_000) == 1_500
    assert result_token_cap(191_808, 4) == 191_808 // 4 // 4
    assert result_token_cap(1_000, 8) == MIN_RESULT_TOKENS
