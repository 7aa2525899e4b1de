"""Live tool output: results that stopped being true, or that a later call made redundant.

Three producers feed the collapse pass (``collapse.py``) from the snapshot alone, as
``clearing.py`` does, and each leaves the model's call as it was sent (the pair stays valid
and the model's own turn unchanged); the result's text gives way to a one-line note:

* **stale**: a result past its ``stale_after`` at the compile's ``now`` (the compile
  activity sets it from the tool's ``fresh_for``). The freshness pass drops a stale block,
  but dropping a result means dropping its call, which would rewrite what the model said;
  so a paired result is replaced by a note that says when it went stale and asks for a
  fresh call, without repeating the stale content. This one is done whatever the cost: a
  stale status the model acts on is worse than a cache rewrite.
* **repeated** (``eviction.resolve_repeated_calls``, off by default): a result whose call,
  same tool and same arguments, the model made again later; the later result says what is
  true now.
* **after N asks** (``eviction.resolve_after_asks``, off by default): a result N asks
  back is taken as acted on.

The last two trade cache for window: each firing rewrites the cache from an older result,
and agents repeat calls often (``wakeful bench cache`` prices it), so clearing in steps
(``clearing.py``) is the default way old output leaves.

The current wake is never touched, and a result already resolved (cleared in a step, say)
keeps its note. Each fires once per result: the cache is rewritten from that result once,
and the ledger names the rule (``record.py``).
"""

from __future__ import annotations

from bisect import bisect_right
from datetime import datetime

from wakeful.compiler.blocks import (
    ASKS_META,
    CLEARED_META,
    REPEATED_META,
    STALE_META,
    Block,
    BlockKind,
    Role,
    Snapshot,
)
from wakeful.compiler.canonical import canonical_json
from wakeful.compiler.policy import Eviction

__all__ = ["ASKS_META", "REPEATED_META", "STALE_META", "collapse_rule", "settle_tool_output"]

# The policy path a collapsed result's ledger row names, by what collapsed it.
_RULES = (
    (STALE_META, "tool.fresh_for"),
    (REPEATED_META, "eviction.resolve_repeated_calls"),
    (ASKS_META, "eviction.resolve_after_asks"),
    (CLEARED_META, "eviction.clear_tool_output"),
)


def collapse_rule(meta: dict[str, str]) -> str:
    """The rule a collapsed result's ledger row names (resolved at the source otherwise)."""
    return next((rule for key, rule in _RULES if key in meta), "eviction.collapse_resolved")


def _call_key(call: Block) -> str:
    return f"{call.tool_name}\x00{canonical_json(call.tool_input or {})}"


def settle_tool_output(snapshot: Snapshot, eviction: Eviction, now: datetime) -> Snapshot:
    """The snapshot with its stale, repeated (and, when asked, old) tool results marked
    resolved with the reason; the very same object when none is."""
    blocks = snapshot.blocks
    current = snapshot.current_wake_id
    calls: dict[str, tuple[int, str]] = {}  # call id -> (its position, what it asked)
    last: dict[str, int] = {}  # what a call asked -> the position of the last call asking it
    asks: list[int] = []  # the positions of the asks
    for n, b in enumerate(blocks):
        if b.kind is BlockKind.TOOL_CALL and b.tool_call_id is not None:
            key = _call_key(b)
            calls[b.tool_call_id] = (n, key)
            last[key] = n
        elif b.kind is BlockKind.CURRENT_ASK or (b.kind is BlockKind.TURN and b.role is Role.USER):
            asks.append(n)
    after, repeats = eviction.resolve_after_asks, eviction.resolve_repeated_calls
    settled: dict[int, Block] = {}
    for n, b in enumerate(blocks):
        if b.kind is not BlockKind.TOOL_RESULT or b.tool_call_id is None or b.resolved:
            continue
        if current is not None and b.wake_id == current:
            continue
        reason: dict[str, str] | None = None
        call = calls.get(b.tool_call_id)
        if b.stale_after is not None and b.stale_after <= now:
            reason = {STALE_META: b.stale_after.isoformat()}
        elif repeats and call is not None and last[call[1]] > call[0]:
            reason = {REPEATED_META: "1"}
        elif after and len(asks) - bisect_right(asks, n) >= after:
            reason = {ASKS_META: str(after)}
        if reason is not None:
            # No stale_after on the copy: the note replaces the result, and freshness would
            # otherwise drop the pair.
            update = {"resolved": True, "stale_after": None, "meta": {**b.meta, **reason}}
            settled[n] = b.model_copy(update=update)
    if not settled:
        return snapshot
    kept = tuple(settled.get(n, b) for n, b in enumerate(blocks))
    return snapshot.model_copy(update={"blocks": kept})
