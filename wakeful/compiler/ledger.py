"""The ledger: one row per block saying what it is, what it cost and why it is in or out.

Rows are :class:`typing.NamedTuple` s rather than pydantic models: a compile over 100k blocks
writes 100k rows, which must cost a fraction of a microsecond each; they still validate and
serialise through pydantic (as compact JSON arrays, fields in the order declared here).
Rows follow the snapshot's block order (synthetic blocks — agent instructions, trigger
rules, a synthetic ask — last); ``position`` is the block's index in the window, -1 when it
is excluded, and :meth:`Ledger.included` returns the window in order. ``content_hash`` is
filled for included blocks only (the ones whose bytes can reach the provider), because
hashing every candidate would dominate the compile.

The ledger is frozen. The orchestrator attaches its own decisions (e.g. pacing) with
:meth:`Ledger.with_note` / :meth:`Ledger.with_decision`, which return a copy.
"""

from __future__ import annotations

from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field

INCLUDED = "included"
COLLAPSED = "collapsed"
EXCLUDED = "excluded"


class LedgerRow(NamedTuple):
    block_id: str
    kind: str
    source: str
    segment: str
    status: str  # included | collapsed | excluded
    reason: str  # e.g. current_wake, load_bearing, ranked, spill, duplicate, stale, budget
    rule: str  # the policy path that decided, e.g. budget.allocations.evidence
    detail: str
    tokens: int  # what the block costs (or would have cost) in this window
    tokens_freed: int  # tokens an exclusion or collapse saved
    position: int  # index in window order; -1 when excluded
    score: float  # log2 rank score, recency relative to the newest event
    content_hash: str  # blake2b of what was rendered; "" for excluded blocks


class Breakpoint(BaseModel):
    """A segment end: a ``cache_control`` placement (Anthropic) or a prefix checkpoint."""

    model_config = ConfigDict(frozen=True)

    name: str  # stable | semi_stable | summaries | bridge | rolling
    block_id: str = Field(description="The last block the cached prefix contains.")
    location: str = Field(description="JSON pointer of the marked element, e.g. /system/0.")
    ttl: str | None = Field(description="Cache TTL; None for implicit (OpenAI) checkpoints.")
    explicit: bool
    prefix_hash: str = Field(description="Hash of the rendered prefix up to here, no markers.")
    prefix_tokens: int = Field(description="Tokens of the window up to and including here.")
    blocks_since_previous: int = Field(description="Content blocks since the previous mark.")


# Bumped when the same inputs compile to a different window or ledger: a replay of a compile
# made by another version can then say why it differs. 2: tool-call ids are charged. 3: the
# model's replies are sent back as returned (a call's text is its arguments, no longer a
# text block of its own, and is charged once; a reply's blocks stay one message). 4: a
# duplicate's row says why the other copy won; an evidence block the current wake repeats
# says why it stays (``dedupe.prefix_stable``). 5: evidence follows the current wake's
# content (``evidence.placement``) and a wake's recorded evidence is sent as one item.
# 6: old tool output is cleared in steps (``clearing.py``); the data notice is shorter;
# read_result is sent while a shortened result needs it. 7: the data notice goes with the
# first data in the window instead of the instructions. 8: a ``cleared`` breakpoint after
# the last cleared tool result, so a clearing step reads the cleared part. 9: a clearing
# step moves the boundary to the newest kept tokens, not to a multiple of the step. 10: a
# stale or repeated tool result is collapsed to a note (``live_output.py``), its call kept.
# 11: a wake_bridge breakpoint also when the last wake is exactly the lookback long.
# 12: a wake's recorded evidence holds a block only while its content is as recorded
# (``evidence.EVIDENCE_HASHES_META``); a block whose content changed is evidence again.
# 13: a user turn or summary over its share of the window is shown head and tail
# (``oversize.py``). 14: retrieved hits are admitted by their worth (``admission.py``), an
# ended wake's evidence is carried only while that is cheaper than fetching it again
# (``evidence.carried``), and a first call's evidence is sent after the cached prefix.
# 15: a skill the model loaded for one task class is left out under a goal of another
# (``triggers.unloaded``); a trigger's knobs apply to the compile and are named in the
# decisions (``knobs.py``); a failed tool result a later equal call made good, and one over
# ``eviction.tool_output_max_tokens``, may be collapsed (``live_output.py``).
COMPILER_VERSION = 15


class Ledger(BaseModel):
    model_config = ConfigDict(frozen=True)

    compiler_version: int = Field(
        1, description="COMPILER_VERSION of the compile (ledgers from before it was kept: 1)."
    )
    provider: str
    model: str
    counter: str
    policy_name: str
    policy_version: int
    policy_fingerprint: str
    window_hash: str
    stable_prefix_hash: str
    semi_stable_hash: str
    input_budget: int = Field(description="context_limit - output_reserve.")
    usable_tokens: int = Field(description="input_budget - headroom - fixed framing.")
    input_tokens: int
    tokens_by_bucket: dict[str, int]
    breakpoints: tuple[Breakpoint, ...]
    rows: tuple[LedgerRow, ...]
    notes: tuple[str, ...] = ()
    decisions: dict[str, str] = Field(default_factory=dict)

    def included(self) -> tuple[LedgerRow, ...]:
        """Included rows in window order."""
        return tuple(sorted((r for r in self.rows if r.position >= 0), key=lambda r: r.position))

    def excluded(self) -> tuple[LedgerRow, ...]:
        return tuple(r for r in self.rows if r.position < 0)

    def row(self, block_id: str) -> LedgerRow | None:
        return next((r for r in self.rows if r.block_id == block_id), None)

    def with_note(self, note: str) -> Ledger:
        return self.model_copy(update={"notes": (*self.notes, note)})

    def with_decision(self, key: str, value: str) -> Ledger:
        return self.model_copy(update={"decisions": {**self.decisions, key: value}})

    def fresh_session_tokens(self, evidence_limit: int) -> int:
        """What a fresh session's first call would write after the stable prefix: the
        semi-stable segment (the registry, a handoff note), the summaries, and the evidence
        its first wake would bring back of this session (its history and evidence, up to
        ``evidence_limit``, what one wake may bring: the policy's retrieval.max_tokens)."""
        b = self.tokens_by_bucket
        return (
            b.get("semi_stable", 0)
            + b.get("summaries", 0)
            + self.fresh_session_evidence(evidence_limit)
        )

    def fresh_session_evidence(self, evidence_limit: int) -> int:
        """What a wake of a fresh session would bring back of this session as evidence:
        its history, the current wake (the ask and its turns: history by then) and the
        evidence, up to ``evidence_limit`` (what one wake may bring)."""
        b = self.tokens_by_bucket
        held = b.get("recent", 0) + b.get("ask", 0) + b.get("evidence", 0)
        return min(held, evidence_limit)
