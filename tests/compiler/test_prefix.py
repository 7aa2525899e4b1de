"""Window hashes resumed from an agent's last window: the same hashes as from scratch."""

from __future__ import annotations

import hashlib

import pytest

from wakeful.compiler import CountingCache
from wakeful.compiler.blocks import content_hash
from wakeful.compiler.prefix import HashChains, hash_states

from .factory import base_blocks, snapshot
from .helpers import compile_

HEADER = b'["anthropic","m"]'


def _scratch(parts: list[str]) -> list[str]:
    """The prefix chain's definition: the header, then each part and a newline."""
    h = hashlib.blake2b(HEADER, digest_size=16)
    out = []
    for part in parts:
        h.update((part + "\n").encode())
        out.append(h.hexdigest())
    return out


def _parts(n: int, tag: str = "") -> list[str]:
    # Built at run time, so that equal parts of two calls are distinct objects.
    return ["".join(["part ", str(i), tag, " é"]) for i in range(n)]


def _chain(parts: list[str], chains: HashChains | None = None, key: str = "a") -> list[str]:
    states = hash_states(parts, header=HEADER, separator=b"\n", chains=chains, key=key)
    return [s.hexdigest() for s in states]


def test_states_are_the_chain_from_scratch_with_or_without_a_memo() -> None:
    parts = _parts(6)
    assert _chain(parts) == _scratch(parts)
    assert _chain(parts, HashChains()) == _scratch(parts)
    assert hash_states([], chains=HashChains(), key="b") == ()


def test_without_header_or_separator_the_last_state_is_the_content_hash_of_the_whole() -> None:
    parts = ['{"a":', '"é"', "}"]
    chains = HashChains()
    for _ in range(2):  # from scratch, then resumed
        assert hash_states(parts, chains=chains, key="w")[-1].hexdigest() == content_hash(
            "".join(parts)
        )


def test_a_window_that_grows_resumes_after_its_unchanged_parts() -> None:
    chains = HashChains()
    parts = _parts(5)
    first = hash_states(parts, header=HEADER, separator=b"\n", chains=chains, key="a")
    grown = [*_parts(5), "part 5"]  # equal, not identical: compared by value too
    second = hash_states(grown, header=HEADER, separator=b"\n", chains=chains, key="a")
    assert all(a is b for a, b in zip(first, second[:5], strict=True))  # kept, not redone
    assert [s.hexdigest() for s in second] == _scratch(grown)


def test_a_changed_part_changes_the_hashes_from_there_on() -> None:
    chains = HashChains()
    parts = _parts(5)
    before = _chain(parts, chains)
    changed = [*parts[:2], parts[2].upper(), *parts[3:]]  # as long, other bytes
    after = _chain(changed, chains)
    assert after == _scratch(changed)
    assert after[:2] == before[:2]
    assert all(a != b for a, b in zip(after[2:], before[2:], strict=True))
    shorter = _chain(parts[:3], chains)  # a window that lost its end
    assert shorter == _scratch(parts[:3])


def test_each_key_resumes_its_own_chain() -> None:
    chains = HashChains()
    _chain(_parts(4), chains, key="a")
    other = _parts(4, tag="x")
    assert _chain(other, chains, key="b") == _scratch(other)
    assert _chain(_parts(4), chains, key="a") == _scratch(_parts(4))


def test_kept_states_are_bounded_least_recently_used_first() -> None:
    chains = HashChains(max_entries=10)
    _chain(_parts(4), chains, key="a")
    _chain(_parts(4), chains, key="b")
    assert chains.get("a") is not None  # a is now the most recent
    _chain(_parts(4), chains, key="c")
    assert chains.get("b") is None and chains.get("a") is not None
    _chain(_parts(11), chains, key="d")  # larger than the bound: not kept
    assert chains.get("d") is None


def test_kept_parts_are_bounded_by_their_characters() -> None:
    chains = HashChains(max_chars=40)  # a _parts(2) chain holds 16 characters
    _chain(_parts(2), chains, key="a")
    _chain(_parts(2), chains, key="b")
    _chain(_parts(2), chains, key="c")  # 48 > 40: a goes
    assert chains.get("a") is None and chains.get("b") is not None
    _chain(_parts(6), chains, key="d")  # 48 on its own: not kept
    assert chains.get("d") is None


@pytest.mark.parametrize("provider", ["anthropic", "openai_chat", "openai_responses"])
def test_a_warm_compile_hashes_what_a_cold_one_does_when_a_turn_changes_in_place(
    provider: str,
) -> None:
    """A turn rewritten to text of the same length: every hash after it differs from the
    last window's, and each is the hash a compile with no memory computes."""
    cache = CountingCache()
    blocks = base_blocks()
    first = compile_(snapshot(blocks), provider=provider, cache=cache)
    at = next(i for i, b in enumerate(blocks) if b.id == "t-11")
    blocks[at] = blocks[at].model_copy(update={"text": blocks[at].text.upper()})
    warm = compile_(snapshot(blocks), provider=provider, cache=cache)
    cold = compile_(snapshot(blocks), provider=provider)
    assert warm.request_json == cold.request_json
    assert warm.ledger.model_dump_json() == cold.ledger.model_dump_json()
    assert warm.window_hash == content_hash(warm.request_json) != first.window_hash
    assert warm.breakpoints[-1].prefix_hash != first.breakpoints[-1].prefix_hash
