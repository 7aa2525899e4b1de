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
* **resolved errors** (``eviction.evict_resolved_errors``, off by default): a failed result
  whose call, same tool and same arguments, the model made again later and which then
  succeeded: the failure is resolved, and the later result says what is true.
* **over the cap** (``eviction.tool_output_max_tokens``, 0 by default: off): a result of
  more tokens than the cap.

The last two trade cache for window: each firing rewrites the cache from an older result,
and agents repeat calls often (``wakeful bench cache`` prices it), so clearing in steps
(``clearing.py``) is the default way old output leaves.

The current wake is never touched, and a result already resolved (cleared in a step, say)
keeps its note. Each fires once per result: the cache is rewritten from that result once,
and the ledger names the rule (``record.py``).

Like ``clearing.py`` this works on the snapshot's facts and says which results change and
how (:func:`settled_results`); the pipeline keeps the facts of each settled copy by its
source. A call's key (tool and canonical arguments) is kept on its facts, and the scans
that find the candidates run at C speed, so a compile reads only the results that may
settle.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Hashable, Iterable, Sequence
from datetime import datetime
from functools import partial
from itertools import compress, repeat
from operator import and_, attrgetter, eq

from wakeful.compiler.blocks import (
    ASKS_META,
    CLEARED_META,
    FIXED_META,
    OVER_CAP_META,
    REPEATED_META,
    STALE_META,
    Block,
    BlockKind,
    Role,
)
from wakeful.compiler.canonical import canonical_json
from wakeful.compiler.facts import PAIRED, RESOLVED, STALE_AFTER, Derivation, Facts
from wakeful.compiler.policy import Eviction
from wakeful.compiler.positions import Positions, Test, without_positions

__all__ = [
    "ASKS_META",
    "FIXED_META",
    "OVER_CAP_META",
    "REPEATED_META",
    "STALE_META",
    "collapse_rule",
    "settled_results",
]

# The policy path a collapsed result's ledger row names, by what collapsed it.
_RULES = (
    (STALE_META, "tool.fresh_for"),
    (FIXED_META, "eviction.evict_resolved_errors"),
    (REPEATED_META, "eviction.resolve_repeated_calls"),
    (ASKS_META, "eviction.resolve_after_asks"),
    (OVER_CAP_META, "eviction.tool_output_max_tokens"),
    (CLEARED_META, "eviction.clear_tool_output"),
)

_KIND = attrgetter("kind_s")
_FLAGS = attrgetter("flags")
_TOOL_CALL = BlockKind.TOOL_CALL.value
_TOOL_RESULT = BlockKind.TOOL_RESULT.value
_TURN = BlockKind.TURN.value
_CURRENT_ASK = BlockKind.CURRENT_ASK.value
_REPEATED: Derivation = (True, ((REPEATED_META, "1"),))
_FIXED: Derivation = (True, ((FIXED_META, "1"),))


def collapse_rule(meta: dict[str, str]) -> str:
    """The rule a collapsed result's ledger row names (resolved at the source otherwise)."""
    return next((rule for key, rule in _RULES if key in meta), "eviction.collapse_resolved")


def _call_key(call: Block) -> str:
    return f"{call.tool_name}\x00{canonical_json(call.tool_input or {})}"


def call_key(f: Facts) -> str:
    """What a call asked (tool and arguments), spelled once per facts."""
    key = f.call_key
    if key is None:
        key = f.call_key = _call_key(f.block)
    return key


def _kind_is(kind: str, facts: Sequence[Facts]) -> Iterable[bool]:
    return map(eq, map(_KIND, facts), repeat(kind))


def _stale_after(facts: Sequence[Facts]) -> Iterable[int]:
    return map(and_, map(_FLAGS, facts), repeat(STALE_AFTER))


def settled_results(
    snap: Sequence[Facts],
    current: str | None,
    eviction: Eviction,
    now: datetime,
    marks: Positions | None = None,
    left_out: list[int] | None = None,
) -> list[tuple[int, Derivation]]:
    """The snapshot indexes of the stale, repeated (and, when asked, old) tool results, in
    order, each with the derivation that marks it resolved with the reason. ``marks`` (on
    the list ``snap`` is with the facts at ``left_out`` left out) only saves work."""

    def where(key: Hashable, test: Test) -> list[int]:
        if marks is None:
            return list(compress(range(len(snap)), test(snap)))
        return without_positions(marks.of(key, test), left_out or [])

    def _of_kind(_: Sequence[Facts], kind: str) -> list[int]:
        return where(("kind", kind), partial(_kind_is, kind))

    after, repeats = eviction.resolve_after_asks, eviction.resolve_repeated_calls
    fixed, cap = eviction.evict_resolved_errors, eviction.tool_output_max_tokens
    if after or repeats or fixed or cap:
        candidates = _of_kind(snap, _TOOL_RESULT)
    else:  # only a stale result can settle: those with a stale_after
        flagged = [n for n in where("stale_after", _stale_after) if snap[n].flags & STALE_AFTER]
        kinds = map(_KIND, map(snap.__getitem__, flagged))
        candidates = list(compress(flagged, map(eq, kinds, repeat(_TOOL_RESULT))))
    if not candidates:
        return []
    calls: dict[str, tuple[int, str]] = {}  # call id -> (its position, what it asked)
    last: dict[str, int] = {}  # what a call asked -> the position of the last call asking it
    made_good: dict[str, int] = {}  # what a call asked -> the last call that then succeeded
    if repeats or fixed:
        for n in _of_kind(snap, _TOOL_CALL):
            f = snap[n]
            if f.flags & PAIRED:
                key = call_key(f)
                calls[f.pair] = (n, key)  # type: ignore[index]
                last[key] = n
    if fixed:
        for n in candidates:
            b = snap[n].block
            call = calls.get(b.tool_call_id) if not b.is_error else None  # type: ignore[arg-type]
            if call is not None:
                made_good[call[1]] = max(made_good.get(call[1], -1), call[0])
    asks: list[int] = []  # the positions of the asks
    if after:
        asks = sorted(
            [
                *_of_kind(snap, _CURRENT_ASK),
                *(n for n in _of_kind(snap, _TURN) if snap[n].block.role is Role.USER),
            ]
        )
    settled: list[tuple[int, Derivation]] = []
    for n in candidates:
        f = snap[n]
        if not f.flags & PAIRED or f.flags & RESOLVED:
            continue
        b = f.block
        if current is not None and b.wake_id == current:
            continue
        reason: Derivation | None = None
        call = calls.get(b.tool_call_id) if repeats or fixed else None  # type: ignore[arg-type]
        if b.stale_after is not None and b.stale_after <= now:
            reason = (True, ((STALE_META, b.stale_after.isoformat()),))
        elif fixed and b.is_error and call is not None and made_good.get(call[1], -1) > call[0]:
            reason = _FIXED
        elif repeats and call is not None and last[call[1]] > call[0]:
            reason = _REPEATED
        elif after and len(asks) - bisect_right(asks, n) >= after:
            reason = (True, ((ASKS_META, str(after)),))
        elif cap and f.tokens > cap:
            reason = (True, ((OVER_CAP_META, str(cap)),))
        if reason is not None:
            # No stale_after on the copy (the derivation's flag): the note replaces the
            # result, and freshness would otherwise drop the pair.
            settled.append((n, reason))
    return settled
