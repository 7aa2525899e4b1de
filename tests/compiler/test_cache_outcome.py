"""The cache-miss taxonomy: each class from the provider's counters, the ledgers and the
idle time, on real compiled windows."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from wakeful.compiler import Block, BlockKind, Role, WindowPolicy
from wakeful.compiler.cache_outcome import CacheClass, CacheOutcome, classify
from wakeful.compiler.ledger import Ledger
from wakeful.providers.cache_limits import lookback_blocks

from .factory import NOW, WAKE, base_blocks, block, pair, snapshot, turn
from .helpers import compile_


def _ledgers(
    policy: WindowPolicy | None = None, next_policy: WindowPolicy | None = None
) -> tuple[Ledger, Ledger]:
    """A call, and the next wake's call: the same history plus the first wake's reply
    (each compiled with its policy; None: the default)."""
    first = base_blocks()
    reply = turn("t-21", 21, Role.ASSISTANT, text="Rotated the logs on db-2.", wake_id="wake-7")
    ask = turn("t-22", 22, text="Is the disk fine now?", wake_id="wake-8")
    a = compile_(snapshot(first), policy=policy).ledger
    b = compile_(snapshot([*first, reply, ask], wake="wake-8"), policy=next_policy).ledger
    return a, b


def _next_call(
    a: Ledger, b: Ledger, after_s: int, *, read_tokens: int = 0, lookback: int | None = None
) -> CacheOutcome:
    """Classify call ``b``, made ``after_s`` seconds after call ``a`` (at NOW), with the
    provider reading ``read_tokens`` and no minimum cacheable size."""
    return classify(
        a,
        NOW,
        b,
        NOW + timedelta(seconds=after_s),
        read_tokens=read_tokens,
        min_cacheable=0,
        lookback=lookback,
    )


def test_a_read_of_the_shared_prefix_is_a_hit() -> None:
    a, b = _ledgers()
    probe = _next_call(a, b, 30)
    could = probe.could_read_tokens
    assert could > 0 and probe.through is not None
    hit = _next_call(a, b, 30, read_tokens=could)
    assert hit.cache_class is CacheClass.HIT


def test_nothing_read_after_the_ttl_is_an_expiry_and_within_it_an_eviction() -> None:
    a, b = _ledgers()
    late = _next_call(a, b, 4000)
    assert late.cache_class is CacheClass.TTL_EXPIRED
    assert late.idle_seconds == 4000 and late.ttl_seconds is not None
    assert "idle 4000 s" in late.detail
    soon = _next_call(a, b, 20)
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
    out = _next_call(a, b, 10)
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


def _loop(pairs: int) -> list[Block]:
    """The history of base_blocks (no evidence: it would follow the loop) and a tool loop of
    ``pairs`` calls in the current wake, each call its own reply."""
    evidence = (BlockKind.MEMORY, BlockKind.RETRIEVED)
    blocks = [b for b in base_blocks() if b.kind not in evidence]
    for k in range(pairs):
        blocks.extend(pair(f"loop-{k}", 30 + 2 * k, wake=WAKE))
    return blocks


# A policy that assumes the provider looks further back than it does: no bridge breakpoint.
FAR_SIGHTED = WindowPolicy.default().model_copy(
    update={"cache": WindowPolicy.default().cache.model_copy(update={"lookback_blocks": 500})}
)


def _grown(
    pairs_before: int, pairs_after: int, policy: WindowPolicy = FAR_SIGHTED
) -> tuple[Ledger, Ledger]:
    a = compile_(snapshot(_loop(pairs_before)), policy).ledger
    b = compile_(snapshot(_loop(pairs_after)), policy).ledger
    return a, b


def test_an_entry_past_the_lookback_window_is_named_with_its_distance() -> None:
    a, b = _grown(1, 14)  # 13 calls later: 26 content blocks past the previous rolling entry
    assert [bp.name for bp in b.breakpoints][-1] == "rolling"
    stable = b.breakpoints[0].prefix_tokens  # what the stable breakpoint still finds
    lookback = lookback_blocks("anthropic")
    out = _next_call(a, b, 30, read_tokens=stable, lookback=lookback)
    assert out.cache_class is CacheClass.BEYOND_LOOKBACK, out
    assert out.through == "rolling" and out.could_read_tokens == a.breakpoints[-1].prefix_tokens
    assert out.lookback_distance == 26
    assert "26 blocks before the nearest breakpoint 'rolling'" in out.detail
    assert f"beyond the provider's lookback of {lookback}" in out.detail
    # The provider found it after all: a hit, whatever the distance.
    found = _next_call(a, b, 30, read_tokens=out.could_read_tokens, lookback=lookback)
    assert found.cache_class is CacheClass.HIT
    # Past its TTL the entry was gone anyway: an expiry, not the lookback.
    late = _next_call(a, b, 4000, read_tokens=stable, lookback=lookback)
    assert late.cache_class is CacheClass.TTL_EXPIRED
    # OpenAI matches any cached prefix: never this class there.
    assert lookback_blocks("openai_chat") is None and lookback_blocks("openai_responses") is None
    openai = _next_call(a, b, 30, read_tokens=stable)
    assert openai.cache_class is not CacheClass.BEYOND_LOOKBACK


def test_an_entry_within_the_lookback_window_is_not_that_class() -> None:
    a, b = _grown(1, 9)  # 16 content blocks later: the rolling breakpoint still finds it
    out = _next_call(a, b, 30, lookback=lookback_blocks("anthropic"))
    assert out.cache_class is CacheClass.PROVIDER_EVICTION, out


def test_a_bridge_breakpoint_reaches_the_previous_entry() -> None:
    """The default policy puts a breakpoint where the previous call of a long loop put its
    rolling one: the entry is at distance 0, whatever the loop's length."""
    a, b = _grown(13, 14, WindowPolicy.default())
    assert "bridge" in [bp.name for bp in b.breakpoints]
    out = _next_call(a, b, 30, lookback=lookback_blocks("anthropic"))
    assert out.cache_class is CacheClass.PROVIDER_EVICTION, out


def test_a_changed_block_before_the_entry_is_a_changed_prefix_not_the_lookback() -> None:
    a = compile_(snapshot(_loop(1)), FAR_SIGHTED).ledger
    changed = [
        block("rule-1", BlockKind.SYSTEM_RULE, "Never page a human before 09:00.", seq=1)
        if b.id == "rule-1"
        else b
        for b in _loop(14)
    ]
    b = compile_(snapshot(changed), FAR_SIGHTED).ledger
    out = _next_call(a, b, 30, lookback=lookback_blocks("anthropic"))
    assert out.cache_class is CacheClass.PREFIX_CHANGED, out


def test_the_ttl_is_the_one_the_previous_call_wrote_its_entry_for() -> None:
    # The first call wrote its stable entry for 5 minutes; after 10 idle minutes the next
    # call marks the same prefixes for an hour (adaptive TTLs follow the idle gaps). What the
    # provider held was the 5-minute entry: an expiry, not an eviction.
    short, long = (
        WindowPolicy.default().with_ttls("5m", "5m"),
        WindowPolicy.default().with_ttls("1h", "1h"),
    )
    a, b = _ledgers(short, long)
    out = _next_call(a, b, 600)
    assert out.cache_class is CacheClass.TTL_EXPIRED, out
    assert out.ttl_seconds == 300 and out.idle_seconds == 600


def _tool_loop(rounds: int) -> Ledger:
    """A wake's call after ``rounds`` replies of three tool calls each, over a short
    history with no data before them (so the data notice follows the first results)."""
    keep = {"tool-grep", "rule-1", "t-10", "t-11", "t-14", "ask"}
    blocks = [b for b in base_blocks() if b.id in keep]
    for r in range(rounds):
        for k in range(3):
            blocks.extend(pair(f"loop-{r}-{k}", 30 + 10 * r + 2 * k, wake=WAKE))
    return compile_(snapshot(blocks)).ledger


def _classify(a: Ledger, b: Ledger, read: int, lookback: int | None) -> CacheOutcome:
    at = NOW + timedelta(seconds=20)
    return classify(a, NOW, b, at, read_tokens=read, min_cacheable=200, lookback=lookback)


@pytest.mark.parametrize("lookback", [lookback_blocks("anthropic"), None])
def test_the_previous_calls_entry_within_reach_is_what_could_be_read(
    lookback: int | None,
) -> None:
    """The next call of a tool loop marks no breakpoint where the previous one put its
    rolling entry, but the provider reaches it (within the lookback; OpenAI: any prefix).
    Only the marks it shares counted: \"read 292 of the 156 tokens cached\", and a call
    that read nothing was below the minimum (156 < 200) though 251 tokens were cached."""
    a, b = _tool_loop(1), _tool_loop(2)
    entry = a.breakpoints[-1]
    assert entry.name == "rolling" and entry.prefix_hash not in {
        bp.prefix_hash for bp in b.breakpoints
    }
    missed = _classify(a, b, 0, lookback)
    assert missed.cache_class is CacheClass.PROVIDER_EVICTION, missed
    assert (missed.could_read_tokens, missed.through) == (entry.prefix_tokens, "rolling")
    hit = _classify(a, b, entry.prefix_tokens, lookback)
    assert hit.cache_class is CacheClass.HIT
    assert hit.detail == (
        f"read {entry.prefix_tokens} of the {entry.prefix_tokens} tokens cached through 'rolling'"
    )


def test_a_mark_no_block_owns_counts_the_prefix_it_ends() -> None:
    """A mark on the data notice, an element no block owns, is recorded with the framing's
    tokens alone (a few dozen): the previous call's whole window is what it caches."""
    a, b = _tool_loop(1), _tool_loop(2)
    rolling = a.breakpoints[-1].model_copy(update={"block_id": "", "prefix_tokens": 65})
    on_notice = a.model_copy(update={"breakpoints": (*a.breakpoints[:-1], rolling)})
    for lookback in (lookback_blocks("anthropic"), None):
        out = _classify(on_notice, b, 0, lookback)
        assert out.cache_class is CacheClass.PROVIDER_EVICTION, out
        assert out.could_read_tokens == a.input_tokens


def test_what_was_read_is_never_said_to_be_more_than_what_was_cached() -> None:
    """Whatever the provider counts (its counts are its own, the ledger's the compiler's
    estimates), no line reads \"read R of the N\" with R over N."""
    a, b = _tool_loop(1), _tool_loop(2)
    could = _classify(a, b, 0, None).could_read_tokens
    for read in range(0, 2 * b.input_tokens, 7):
        for lookback in (lookback_blocks("anthropic"), None):
            out = _classify(a, b, read, lookback)
            for said, of in re.findall(r"read (\d+) of the (\d+)", out.detail):
                assert int(said) <= int(of), out.detail
    near = _classify(a, b, could + could // 20, None)  # within the estimate's error
    assert near.cache_class is CacheClass.HIT
    assert near.detail == (
        f"read {could + could // 20} tokens: the prefix cached through 'rolling', {could} "
        "tokens by the compiler's count"
    )
    far = _classify(a, b, 2 * could, None)
    assert far.cache_class is CacheClass.HIT and "more than the" in far.detail
