"""Pass 10 — record: the ledger, the segment hashes and the breakpoints of one window.

Prefix hashes chain the provider, the model and every cache-order element of the rendered
request *without* cache markers, so two windows share a prefix hash exactly when a provider
could serve the second from the first's cache entry at that point.
"""

from __future__ import annotations

import hashlib

from wakeful.compiler.blocks import Segment, content_hash
from wakeful.compiler.framing import canonical_json
from wakeful.compiler.ledger import COLLAPSED, EXCLUDED, INCLUDED, Breakpoint, Ledger, LedgerRow
from wakeful.compiler.place import Layout
from wakeful.compiler.render.base import Rendered
from wakeful.compiler.window import CompiledWindow
from wakeful.compiler.work import REQUEST_OVERHEAD, Facts, Work

_RULES = {
    "agent_instructions": "agent.instructions",
    "load_bearing": "load_bearing",
    "current_wake": "snapshot.current_wake_id",
    "spill": "budget.spill",
}


def _out_ranked(f: Facts) -> LedgerRow:
    """The row of a block the budget left out; memoised, it is the same every compile."""
    row = f.row
    if row is None:
        row = f.row = LedgerRow(
            f.id,
            f.kind_s,
            f.block.source,
            f.seg_s,
            EXCLUDED,
            "budget",
            f"budget.allocations.{f.seg_s}",
            "out-ranked",
            f.tokens,
            f.tokens,
            -1,
            f.key,
            "",
        )
    return row  # type: ignore[no-any-return]


def _rows(work: Work, layout: Layout) -> tuple[list[LedgerRow], list[int]]:
    """One row per block in snapshot order (synthetic blocks last), and the cumulative
    tokens of the window in window order.

    ``score`` is the block's static rank key: its log2 score with recency counted from
    ``seq`` 0. Differences between rows of one ledger are what it means; a constant offset
    would make every out-ranked row differ between compiles for nothing.
    """
    facts = work.facts
    partner, admitted = work.partner, work.admitted
    rows = [f.row or _out_ranked(f) for f in facts]
    for idx, why in work.excluded.items():
        f = facts[idx]
        rows[idx] = LedgerRow(
            f.id,
            f.kind_s,
            f.block.source,
            f.seg_s,
            EXCLUDED,
            why.reason,
            why.rule,
            why.detail,
            f.tokens,
            f.tokens,
            -1,
            f.key,
            "",
        )
    cumulative: list[int] = []
    running = REQUEST_OVERHEAD
    framed: set[str] = set()  # the first retrieved turns in window order pay the shared frame
    for n, item in enumerate(layout.ordered()):
        idx = item.index
        f = facts[idx]
        head = partner.get(idx, idx) if idx not in admitted else idx
        reason = admitted[head]
        note = work.collapsed.get(idx)
        if note is not None:
            status, tokens, freed, digest = COLLAPSED, note[1], f.tokens - note[1], item.block.hash
            rule = "eviction.collapse_resolved"
        else:
            if not f.digest:
                f.digest = f.block.hash
            status, tokens, freed, digest = INCLUDED, f.tokens, 0, f.digest
            rule = _RULES.get(reason) or f"budget.allocations.{item.segment.value}"
            if f.group is not None and f.group not in framed:
                tokens += work.opening_cost(idx, framed)
                framed.add(f.group)
        detail = f"trigger {work.injected[idx]}" if idx in work.injected else ""
        if item.stale:
            detail = (detail + "; stale").lstrip("; ")
        running += tokens
        cumulative.append(running)
        rows[idx] = LedgerRow(
            f.id,
            f.kind_s,
            f.block.source,
            item.segment.value,
            status,
            reason,
            rule,
            detail,
            tokens,
            freed,
            n,
            f.key,
            digest,
        )
    return rows, cumulative


def record(work: Work, layout: Layout, rendered: Rendered, provider: str) -> CompiledWindow:
    request_json = canonical_json(rendered.request)
    window_hash = content_hash(request_json)
    stable_hash = content_hash(canonical_json(rendered.stable))
    semi_hash = content_hash(canonical_json(rendered.semi_stable))
    rows, cumulative = _rows(work, layout)

    by_bucket = {seg.value: 0 for seg in Segment}
    for item in layout.ordered():
        by_bucket[item.segment.value] += rows[item.index].tokens
    by_bucket["overhead"] = REQUEST_OVERHEAD
    input_tokens = sum(by_bucket.values())

    position = {item.block.id: n for n, item in enumerate(layout.ordered())}
    chain = hashlib.blake2b(digest_size=16)
    chain.update(canonical_json([provider, layout.agent.model]).encode())
    breakpoints: list[Breakpoint] = []
    marks = iter(rendered.marks)
    mark = next(marks, None)
    previous = -1
    for el, element in enumerate(rendered.elements):
        chain.update(element.encode())
        chain.update(b"\n")
        while mark is not None and mark.element == el:
            pos = position.get(mark.block_id)
            breakpoints.append(
                Breakpoint(
                    name=mark.name,
                    block_id=mark.block_id,
                    location=rendered.paths[el],
                    ttl=mark.ttl,
                    explicit=mark.explicit,
                    prefix_hash=chain.hexdigest(),
                    prefix_tokens=cumulative[pos] if pos is not None else REQUEST_OVERHEAD,
                    blocks_since_previous=el - previous,
                )
            )
            previous = el
            mark = next(marks, None)

    policy = work.policy
    ledger = Ledger.model_construct(
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
        decisions={},
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
    )
