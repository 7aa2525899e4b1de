"""Each call of a realistic multi-session agent reads back everything the call before cached.

A session shape built from LoCoMo dialogue (several sessions separated by days, so each new
one opens with a handoff note; tool wakes with sizeable results; questions about earlier
sessions, so retrieval brings different evidence at each wake) is replayed through
Wakeful's production compile path and the simulator's Anthropic caching rules. For every
call that follows another within the same session and the cache TTL, the provider's cache
read covers all the previous request read or wrote: nothing before the new content
changed, whether the wake is new, a tool wake went on, or retrieval brought new evidence,
in the first session as in the sessions that open with a handoff note. (The evidence a call
brings goes after its cached prefix, as plain input: only that is not read back.)
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from benchmarks.cache_bench import replay
from benchmarks.cache_locomo import load_split
from benchmarks.cache_shapes import build_shape
from benchmarks.cache_timeline import wake_ref
from benchmarks.cache_wakeful import Wakeful
from wakeful.compiler import WindowPolicy
from wakeful.tokenizers import BpeCounter

DATASET = Path(__file__).resolve().parents[2] / ".." / "shared" / "bench" / "locomo-dev.json"


@pytest.mark.skipif(
    not DATASET.exists(),
    reason=f"no LoCoMo file at {DATASET} (benchmark data, kept outside the repository)",
)
def test_every_call_reads_back_the_whole_previous_request_across_wakes_tools_and_retrieval() -> (
    None
):
    shape = build_shape("handoffs", load_split(DATASET, "dev"), 11)
    session = shape.session
    wakeful = Wakeful(session, WindowPolicy.default(), BpeCounter())
    try:
        tallies, _ = asyncio.run(replay(session, [wakeful], lambda _: None, shape.evidence))
    finally:
        wakeful.close()
    turns = session.turns
    usage = tallies["wakeful"].turns
    windows = wakeful.windows
    assert len(usage) == len(turns) == len(windows)
    wake_of = {w.number: w for w in session.wakes}
    checked = {"new_wake": 0, "tool_wake": 0, "new_evidence": 0, "after_handoff": 0}
    for k in range(1, len(turns)):
        before, now = turns[k - 1], turns[k]
        sent = usage[k - 1]
        # What the call before had in the cache (read or written): all but the evidence it
        # brought after its cached prefix, sent as plain input and not carried further.
        previous = sent.cache_read_input_tokens + sent.cache_creation_input_tokens
        got = usage[k]
        same_session = (
            wake_ref(wake_of[before.wake]).session_id == wake_ref(wake_of[now.wake]).session_id
        )
        if not same_session:
            continue  # days apart: even the 1 h stable prefix has expired
        if wake_of[now.wake].session > 1:
            checked["after_handoff"] += 1
        if now.at - (before.at + before.latency) >= 300:
            continue  # past the TTL the provider forgot it: nothing to read back
        assert got.cache_read_input_tokens == previous, (
            f"call {k} read {got.cache_read_input_tokens} of the {previous} tokens call "
            f"{k - 1} cached"
        )
        if now.wake == before.wake:
            checked["tool_wake"] += 1
        else:
            checked["new_wake"] += 1
            if windows[k].evidence_text:
                checked["new_evidence"] += 1
    assert all(n > 0 for n in checked.values()), checked
