"""Pass 10 — record: the ledger, the segment hashes and the breakpoints of one window.

Prefix hashes chain the provider, the model and every cache-order element of the rendered
request *without* cache markers, so two windows share a prefix hash exactly when a provider
could serve the second from the first's cache entry at that point.
"""

from __future__ import annotations

from functools import partial

from wakeful.compiler.blocks import content_hash
from wakeful.compiler.canonical import canonical_json
from wakeful.compiler.dedupe import kept_detail, later_copies
from wakeful.compiler.encode import request_parts
from wakeful.compiler.facts import digest_of
from wakeful.compiler.ledger import (
    COLLAPSED,
    COMPILER_VERSION,
    EXCLUDED,
    INCLUDED,
    Breakpoint,
    Ledger,
    LedgerRow,
)
from wakeful.compiler.live_output import collapse_rule
from wakeful.compiler.place import Layout
from wakeful.compiler.prefix import HashChains, hash_states
from wakeful.compiler.render.base import SEGMENT, Mark, Rendered
from wakeful.compiler.window import CompiledWindow
from wakeful.compiler.work import DEDUPE, Facts, Work

# A LedgerRow from a tuple of its fields, without the NamedTuple's Python-level __new__.
_row = partial(tuple.__new__, LedgerRow)

_RULES = {
    "agent_instructions": "agent.instructions",
    "load_bearing": "load_bearing",
    "current_wake": "snapshot.current_wake_id",
    "spill": "budget.spill",
}


def _rows(work: Work, layout: Layout) -> tuple[list[LedgerRow], list[int], dict[str, int]]:
    """One row per block in snapshot order (synthetic blocks last), the cumulative tokens
    of the window in window order, and the tokens per segment.

    ``score`` is the block's static rank key: its log2 score with recency counted from
    ``seq`` 0. Differences between rows of one ledger are what it means; a constant offset
    would make every out-ranked row differ between compiles for nothing. Rows the
    partition decided (exclusions that follow from the snapshot alone, and out-ranked
    rows) are reused; only this compile's decisions make new rows.
    """
    part = work.part
    admitted = work.admitted
    decided: dict[Facts, LedgerRow] = {}
    for f, why in work.excluded.items():
        memo = f.xrow  # a stale block is excluded the same way compile after compile
        if memo is None or memo[0] != why:
            memo = f.xrow = (why, LedgerRow(
                f.id, f.kind_s, f.block.source, f.seg_s, EXCLUDED, why.reason, why.rule,
                why.detail, f.tokens, f.tokens, -1, f.key, "",
            ))  # fmt: skip
        decided[f] = memo[1]
    cumulative: list[int] = []
    running = work.overhead
    partner, collapsed, injected = part.partner, part.collapsed, work.injected
    framed: set[str] = set()  # the first retrieved turns in window order pay the shared frame
    by_bucket = dict.fromkeys(SEGMENT.values(), 0)
    later = later_copies(work)
    tail = set(work.tail) if later else ()
    for n, item in enumerate(layout.ordered()):
        f = item.facts
        reason = admitted.get(f) or admitted[partner[f]]
        note = collapsed.get(f)
        if note is not None:
            status, tokens, freed = COLLAPSED, note[1], f.tokens - note[1]
            digest = f.shown[1] if f.shown is not None else item.block.hash
            rule = collapse_rule(f.block.meta)
        else:
            digest = f.digest or digest_of(f)  # inline first: this loop runs per block
            status, tokens, freed = INCLUDED, f.tokens, 0
            rule = _RULES.get(reason) or f"budget.allocations.{SEGMENT[item.segment]}"
            if f.group is not None and f.group not in framed:
                tokens += work.opening_cost(f, framed)
                framed.add(f.group)
            if item.stale:
                tokens += work.stale_cost(f)
        detail = f"trigger {injected[f]}" if f in injected else work.notes.get(f, "")
        if item.stale:
            detail = (detail + "; stale").lstrip("; ")
        if later and f.flags & DEDUPE and f not in tail:
            copy = later.get(f.block.text)
            if copy is not None:
                detail = (detail + "; " + kept_detail(copy)).lstrip("; ")
        running += tokens
        cumulative.append(running)
        segment = SEGMENT[item.segment]
        by_bucket[segment] += tokens
        decided[f] = _row(
            (
                f.id, f.kind_s, f.block.source, segment, status, reason, rule,
                detail, tokens, freed, n, f.key, digest,
            )
        )  # fmt: skip
    base = part.base_rows()
    pos = part.lasting_position() if len(decided) * 8 < len(base) else None
    if pos is None:
        rows = list(map(decided.get, part.facts, base))
    else:  # the same blocks as last time: copy their rows, put in this compile's own
        rows = list(base)
        for f, row in decided.items():
            at = pos.get(f)
            if at is not None:
                rows[at] = row
    rows += [decided.get(f, f.row) for f in work.synthetic]
    return rows, cumulative, by_bucket


EVIDENCE_RULE = "evidence.placement"
EVIDENCE_PLACEMENT = (
    "with_wake: after the cached prefix (sent as input), recorded with the wake and sent "
    "again in place by its later calls; later wakes carry it only while that is cheaper "
    "than fetching it again (retrieval.keep_for_calls)"
)


def _in_order(marks: list[Mark], elements: int) -> list[Mark]:
    """The marks up to the first one out of element order (or past the last element),
    which ends the checkpoints."""
    kept: list[Mark] = []
    for mark in marks:
        if mark.element >= elements or (kept and mark.element < kept[-1].element):
            break
        kept.append(mark)
    return kept


def record(
    work: Work, layout: Layout, rendered: Rendered, provider: str, evidence: str = ""
) -> CompiledWindow:
    encode = layout.encode
    agent = layout.agent
    chains = work.cache.state(("hash-chains",), HashChains)
    parts = request_parts(rendered, encode)
    request_json = "".join(parts)
    states = hash_states(parts, chains=chains, key=("window", agent.tenant, agent.name, provider))
    window_hash = states[-1].hexdigest()  # request_parts gives one part at least
    stable_hash = content_hash(encode(rendered.stable))
    semi_hash = content_hash(encode(rendered.semi_stable))
    rows, cumulative, by_bucket = _rows(work, layout)

    by_bucket["overhead"] = work.overhead
    input_tokens = sum(by_bucket.values())

    position = {item.block.id: n for n, item in enumerate(layout.ordered())}
    marks = _in_order(rendered.marks, len(rendered.elements))
    # The header is part of the chain: the provider and the model are in its key.
    prefixes = hash_states(
        rendered.elements[: marks[-1].element + 1 if marks else 0],
        header=canonical_json([provider, agent.model]).encode(),
        separator=b"\n",
        chains=chains,
        key=("prefix", agent.tenant, agent.name, provider, agent.model),
    )
    breakpoints: list[Breakpoint] = []
    previous = -1
    for mark in marks:
        el = mark.element
        pos = position.get(mark.block_id)
        breakpoints.append(
            Breakpoint.model_construct(  # fields are plain str/int/bool: nothing to validate
                name=mark.name,
                block_id=mark.block_id,
                location=rendered.paths[el],
                ttl=mark.ttl,
                explicit=mark.explicit,
                prefix_hash=prefixes[el].hexdigest(),
                prefix_tokens=cumulative[pos] if pos is not None else work.overhead,
                blocks_since_previous=el - previous,
            )
        )
        previous = el

    policy = work.policy
    ledger = Ledger.model_construct(
        compiler_version=COMPILER_VERSION,
        provider=provider,
        model=layout.agent.model,
        counter=work.counter.name,
        policy_name=policy.name,
        policy_version=policy.version,
        policy_fingerprint=policy.fingerprint,
        window_hash=window_hash,
        stable_prefix_hash=stable_hash,
        semi_stable_hash=semi_hash,
        input_budget=policy.budget.input_budget,
        usable_tokens=work.usable,
        input_tokens=input_tokens,
        tokens_by_bucket=by_bucket,
        breakpoints=tuple(breakpoints),
        rows=tuple(rows),
        notes=(),
        decisions={
            **({EVIDENCE_RULE: EVIDENCE_PLACEMENT} if evidence else {}),
            **work.layers,
        },
    )
    return CompiledWindow.model_construct(
        provider=provider,
        model=layout.agent.model,
        request=rendered.request,
        request_json=request_json,
        window_hash=window_hash,
        stable_prefix_hash=stable_hash,
        semi_stable_hash=semi_hash,
        prompt_cache_key=rendered.request.get("prompt_cache_key"),
        input_tokens=input_tokens,
        tokens_by_bucket=by_bucket,
        breakpoints=tuple(breakpoints),
        ledger=ledger,
        evidence_text=evidence,
        evidence_blocks=tuple(p.block.id for p in layout.evidence) if evidence else (),
        # The block as given (a collapsed one is placed with its note as text).
        evidence_hashes=tuple(digest_of(p.facts) for p in layout.evidence) if evidence else (),
    )
