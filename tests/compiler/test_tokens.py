from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from wakeful.compiler import (
    CountingCache,
    EstimatingCounter,
    TokenCounter,
)
from wakeful.tokenizers import BpeCounter

from .factory import snapshot
from .helpers import compile_


@dataclass
class Tally:
    """A counter that records what it was asked to count."""

    inner: EstimatingCounter = field(default_factory=EstimatingCounter)
    seen: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return "tally"

    def count(self, text: str) -> int:
        self.seen.append(text)
        return self.inner.count(text)


def test_estimating_counter_rounds_bytes_up() -> None:
    counter = EstimatingCounter()
    assert counter.count("") == 0
    assert counter.count("abcd") == 1
    assert counter.count("abcde") == 2
    assert counter.count("é" * 4) == 2  # 8 UTF-8 bytes
    assert isinstance(counter, TokenCounter)


def test_bpe_counter_counts_real_tokens() -> None:
    counter = BpeCounter("o200k_base")
    assert isinstance(counter, TokenCounter)
    assert counter.name == "bpe/o200k_base"
    assert counter.count("hello world") == 2
    assert counter.count("<|endoftext|>") > 1  # special tokens are plain text here
    assert BpeCounter("cl100k_base").count("hello world") == 2


def test_each_block_is_counted_once_per_cache() -> None:
    tally = Tally()
    cache = CountingCache()
    snap = snapshot()
    a = compile_(snap, counter=tally, cache=cache)
    body_counts = len(tally.seen)
    assert body_counts > 0
    assert tally.seen.count(snap.blocks[1].text) == 1
    b = compile_(snap, counter=tally, cache=cache)
    assert len(tally.seen) == body_counts  # nothing counted again
    assert a.request_json == b.request_json


def test_warm_and_cold_caches_give_identical_output() -> None:
    cache = CountingCache()
    snap = snapshot()
    warm = [compile_(snap, cache=cache) for _ in range(2)][-1]
    cold = compile_(snap, cache=CountingCache())
    assert warm.request_json == cold.request_json
    assert warm.ledger == cold.ledger


def test_bpe_counter_counts_texts_longer_than_the_encoder_accepts() -> None:
    from wakeful.tokenizers import BpeCounter

    counter = BpeCounter()
    chunk = "lorem ipsum dolor sit amet " * 1_000
    long = chunk * 60  # the encoder alone refuses this
    assert counter.count(long) == pytest.approx(60 * counter.count(chunk), rel=0.001)
