"""``compile_window``: (snapshot, goal, policy, now) -> CompiledWindow, a pure function.

The passes run in this fixed order; each is one module with its own tests:

    1. triggers   goal-driven injection and gating of rules and skills   (triggers.py)
    2. select     current wake vs candidates, tool pairs, orphans         (select.py)
    3. dedupe     exact duplicates and supersession keys                  (dedupe.py)
    4. freshness  stale blocks excluded or flagged                        (freshness.py)
    5. collapse   resolved and cleared tool output to a one-line note     (collapse.py,
                  clearing.py: old tool output is cleared in large steps; oversize.py:
                  a user turn over its share of the window is shown head and tail)
    6. rank       recency × importance × relevance                        (rank.py)
    7. budget     per-bucket allocations, pressure, BudgetError           (budget.py;
                  layers.py: a declared layer's share caps it, and a higher
                  priority's blocks are admitted first)
    8. place      window order, evidence edges-first                      (place.py)
    9. render     provider syntax and cache breakpoints                   (render/)
   10. record     ledger, segment and prefix hashes                       (record.py)

Passes 1-3, 5 and the ranking half of 6 depend on the snapshot alone (not on ``now`` or the
budget): the agent's :class:`~wakeful.compiler.state.Partition` keeps their outcome and
redoes only what a new snapshot changed. Freshness, relevance floors and passes 7-10 run on
every compile; the budget reads candidates best first and stops early (``streams.py``).

Same inputs, same bytes: no clock (``now`` is an argument), no randomness, no I/O, no
iteration over unordered collections, hashes from blake2b. The optional ``cache`` only
saves work; it never changes the output.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TypeVar

from wakeful.compiler.admission import admit_evidence
from wakeful.compiler.blocks import Block, BlockKind, Goal, Snapshot
from wakeful.compiler.budget import budget
from wakeful.compiler.clearing import ClearingMemo, cleared_results, unneeded_on_demand
from wakeful.compiler.encode import JsonMemo, request_parts
from wakeful.compiler.evidence import held_by_evidence, leave_out_spent
from wakeful.compiler.facts import Derivation
from wakeful.compiler.freshness import freshness
from wakeful.compiler.knobs import knob_decisions, with_knobs
from wakeful.compiler.layers import cap_layers, prioritise_layers
from wakeful.compiler.live_output import settled_results
from wakeful.compiler.lookup import FactsTable, shared_prefix
from wakeful.compiler.oversize import shorten_oversized
from wakeful.compiler.partition import get_partition, update
from wakeful.compiler.place import Layout, place
from wakeful.compiler.policy import Ranking, WindowPolicy
from wakeful.compiler.positions import Edit
from wakeful.compiler.rank import min_relevance
from wakeful.compiler.record import record
from wakeful.compiler.render import PROVIDER_ALIASES, RENDERERS, Renderer
from wakeful.compiler.select import tail_of
from wakeful.compiler.splice import Answer, changed_outside, shared_ends, spliced
from wakeful.compiler.state import Partition
from wakeful.compiler.tokens import CountingCache, TokenCounter
from wakeful.compiler.triggers import gate, trigger_rules
from wakeful.compiler.window import CompiledWindow
from wakeful.compiler.work import Exclusion, Facts, Work
from wakeful.errors import ConfigError, UserError

T = TypeVar("T")


def resolve_provider(provider: str) -> str:
    name = PROVIDER_ALIASES.get(provider, provider)
    if name not in RENDERERS:
        known = ", ".join([*RENDERERS, *PROVIDER_ALIASES])
        raise ConfigError(f"unknown provider {provider!r}; expected one of {known}")
    return name


def instructions_block(snapshot: Snapshot) -> Block:
    agent = snapshot.agent
    return Block(
        id="agent:instructions",
        kind=BlockKind.SYSTEM_RULE,
        text=agent.instructions,
        source=f"agent:{agent.tenant}/{agent.name}",
        seq=-1,
        load_bearing=True,
        importance=1.0,
    )


class _Derived:
    """What clearing and live output made of one snapshot's facts, kept on the agent's
    partition: the next compile of the same facts (the same objects, in the same order),
    wake, eviction and ``now`` takes it as it is; one of facts edited in one stretch is
    spliced from it (``splice.py``), which needs the passes' answers. It holds facts,
    which live on in the cache anyway, and no block: a worker's blocks are new every
    compile, and holding them would only move the cost of freeing them into the next one."""

    __slots__ = (
        "cleared",
        "current",
        "eviction",
        "keep_for_calls",
        "kept",
        "left_out",
        "now",
        "out",
        "settled",
        "source",
    )

    def __init__(
        self,
        source: list[Facts],
        current: str | None,
        eviction: object,
        now: datetime,
        out: list[Facts],
        left_out: list[int],
        keep_for_calls: int,  # retrieval.keep_for_calls (evidence.py)
        answers: tuple[Answer, Answer, tuple[list[Facts], list[Facts]]] | None,
    ) -> None:
        self.source, self.current, self.eviction, self.now = source, current, eviction, now
        self.out, self.left_out, self.keep_for_calls = out, left_out, keep_for_calls
        # When nothing was held out by evidence (so that positions are those of
        # ``source``, and ``left_out`` the on-demand tools alone): the clearing's and live
        # output's answers, and ``source`` with the cleared results in place, then the
        # settled ones too (the lists the next compile splices from).
        self.cleared: Answer = answers[0] if answers else []
        self.settled: Answer = answers[1] if answers else []
        self.kept: tuple[list[Facts], list[Facts]] | None = answers[2] if answers else None


class _Applied:
    """The clearing pass's last answer as applied: where, how, to which facts, making
    which. Clearing gives much the same answer compile after compile (its leading entries
    are those of the last answer while the boundary stays), so that part is taken as it
    was wherever it still applies to the very same facts."""

    __slots__ = ("answer", "at", "how", "made", "sources")

    def __init__(
        self,
        answer: list[tuple[int, Derivation]],
        at: list[int],
        how: list[Derivation],
        sources: list[Facts],
        made: list[Facts],
    ) -> None:
        self.answer, self.at, self.how, self.sources, self.made = answer, at, how, sources, made


def _apply(
    out: list[Facts],
    answer: list[tuple[int, Derivation]],
    last: _Applied | None,
    make: Callable[[list[Facts], list[Derivation]], list[Facts]],
) -> _Applied:
    """``answer`` (positions in ``out`` and derivations) with the derived facts of each,
    those ``last`` made reused where they apply to the same facts in the same way."""
    k = 0
    if last is not None:
        k = shared_prefix(answer, last.answer, min(len(answer), len(last.answer)))
        if k:  # ...and only as far as the very same facts are found there
            k = shared_prefix(list(map(out.__getitem__, last.at[:k])), last.sources, k)
    at, how = last.at[:k] if last else [], last.how[:k] if last else []
    sources, made = last.sources[:k] if last else [], last.made[:k] if last else []
    if k < len(answer):
        more_at, more_how = map(list, zip(*answer[k:], strict=True))
        more_sources = list(map(out.__getitem__, more_at))
        at, how = at + more_at, how + more_how
        sources, made = sources + more_sources, made + make(more_sources, more_how)
    return _Applied(answer, at, how, sources, made)


def _without(items: Sequence[T], indexes: list[int]) -> list[T]:
    """``items`` less those at the (ascending) ``indexes``, spliced in slices."""
    out: list[T] = []
    start = 0
    for n in indexes:
        out += items[start:n]
        start = n + 1
    out += items[start:]
    return out


def derive(
    part: Partition,
    table: FactsTable,
    snap: list[Facts],
    snapshot: Snapshot,
    policy: WindowPolicy,
    now: datetime,
    counts: dict[str, int],
    counter: TokenCounter,
) -> tuple[list[Facts], Snapshot, Edit | None]:
    """The snapshot's facts less those its recorded evidence holds (``evidence.py``), with
    old tool output cleared (``clearing.py``), stale and repeated results settled
    (``live_output.py``) and unneeded on-demand tools left out, and the snapshot whose
    blocks line up with them; and, when known, how that list was edited from the last one
    (for the partition). A derived block's facts are made once per source and derivation
    (``FactsTable.derived``): unchanged blocks derive the same facts, so the partition sees
    no change in them."""
    eviction, current = policy.eviction, snapshot.current_wake_id
    memo: _Derived | None = part.derived
    if (
        memo is not None
        and memo.current == current
        and (memo.eviction is eviction or memo.eviction == eviction)
        and memo.keep_for_calls == policy.retrieval.keep_for_calls
        and memo.now == now
        and (memo.source is snap or memo.source == snap)  # by identity of the facts, in C
    ):
        return memo.out, _lined_up(snapshot, memo.left_out), None
    ranking: Ranking = policy.ranking
    marks = part.positions  # on ``snap``: where the blocks these passes look for sit
    keep_for_calls = policy.retrieval.keep_for_calls
    # Sent as the recorded evidence instead (evidence.py).
    held = held_by_evidence(snap, current, keep_for_calls, marks)
    out = _without(snap, held) if held else snap
    if part.clearing is None:
        part.clearing = ClearingMemo()
    # How ``out`` was edited from the last list, when it is the snapshot's own.
    edit = table.edit if out is snap else None
    cleared = cleared_results(out, current, eviction, part.clearing, edit)
    table.work.results_scanned += part.clearing.scanned
    table.work.history_built += part.clearing.built

    def make(sources: list[Facts], how: list[Derivation]) -> list[Facts]:
        return table.derived_all(sources, how, counts, counter, ranking)

    # The facts with the cleared results in place, then the settled ones: spliced from
    # the last compile's lists when the facts are the last ones edited in one stretch
    # and the answers changed in few places outside it (``splice.py``), else patched.
    changed: list[int] | None = None  # where the clearing's answer changed, if spliced
    if edit is not None and memo is not None and memo.kept is not None and edit[0] is memo.source:
        last, (last_cleared, last_settled), stretch = memo, memo.kept, edit
        shape = (edit[1], edit[2], len(snap), len(last.source))
        changed = changed_outside(cleared, last.cleared, shape)
        if changed is not None:
            out, placed = spliced(last_cleared, snap, edit, cleared, changed, make)
            table.work.results_placed += placed
            part.applied = None  # (``_apply`` reuses its answer by position in the list)
    if changed is None:
        part.applied = applied = _apply(out, cleared, part.applied, make) if cleared else None
        if applied is not None:
            out = list(out) if out is snap else out
            list(map(out.__setitem__, applied.at, applied.made))  # in C: many at once
            table.work.results_placed += len(applied.at)
    cleared_out = out  # kept as it is for the next compile
    # Live output reads the cleared facts.
    settled = settled_results(out, current, eviction, now, marks, held)
    more = None  # where either answer changed, if spliced
    if changed is not None:
        more = changed_outside(settled, last.settled, shape)
        if more is not None:
            more = sorted({*changed, *more})  # a result cleared anew is settled anew
            if settled or last.settled:
                out, placed = spliced(last_settled, cleared_out, stretch, settled, more, make)
                table.work.results_placed += placed
    if more is None and settled:
        applied = _apply(out, settled, None, make)
        out = list(out)
        list(map(out.__setitem__, applied.at, applied.made))
        table.work.results_placed += len(applied.at)
    settled_out = out
    on_demand = unneeded_on_demand(out, marks, held)
    if on_demand:
        out = _without(out, on_demand)
    # The snapshot indexes left out, ascending: those held, then the on-demand tools
    # (indexes after leaving the held ones out, so mapped back through what is kept).
    left_out = held
    if on_demand:
        kept = _without(list(range(len(snap))), held) if held else range(len(snap))
        left_out = sorted([*held, *(kept[n] for n in on_demand)])
    out_edit = None
    if memo is not None and out is not snap and out == memo.out:
        out = memo.out  # the same facts as last time: the partition's fast path
    elif (
        more is not None and left_out == last.left_out and (not left_out or left_out[-1] < shape[0])
    ):
        # The same facts as the last output but for the stretch and the positions whose
        # results changed (and the same on-demand tools left out, before the stretch):
        # told to the partition, it need not find them.
        out_edit = shared_ends(last.out, len(out), shape, left_out, more)
    part.derived = _Derived(
        snap,
        current,
        eviction,
        now,
        out,
        left_out,
        keep_for_calls,
        None if held else (cleared, settled, (cleared_out, settled_out)),
    )
    return out, _lined_up(snapshot, left_out), out_edit


def _lined_up(snapshot: Snapshot, left_out: list[int]) -> Snapshot:
    """The snapshot less the blocks at ``left_out``: its blocks line up with the facts."""
    if not left_out:
        return snapshot
    return snapshot.model_copy(update={"blocks": tuple(_without(snapshot.blocks, left_out))})


def prepare(
    snapshot: Snapshot,
    goal: Goal,
    policy: WindowPolicy,
    now: datetime,
    counter: TokenCounter,
    cache: CountingCache,
) -> Work:
    """Passes 1-3 and 5-6 as far as they follow from the snapshot: bring the agent's
    partition up to date, then start this compile's working set from it."""
    if now.tzinfo is None:
        raise UserError("now must be timezone-aware (UTC)")
    ranking = policy.ranking
    table: FactsTable = cache.state((counter.name, *ranking.model_dump().values()), FactsTable)
    table.work = cache.work
    counts = cache.counts_for(counter)
    agent = snapshot.agent
    part = get_partition(table, agent.tenant, agent.name, policy, counter)

    def count(text: str) -> int:
        tokens = counts.get(text)
        if tokens is None:
            tokens = counts[text] = counter.count(text)
        return tokens

    try:
        snap = table.facts_of(snapshot.blocks, counts, counter, ranking)
        marks = part.positions
        marks.see(snap, table.edit)
        # A user turn or summary over its share of the window is shown head and tail
        # (oversize.py); its facts are matched by value, so an unchanged one costs no work.
        shown = shorten_oversized(snapshot, snap, policy.budget, count, marks)
        if shown is not snapshot:
            snapshot = shown
            snap = table.facts_of(snapshot.blocks, counts, counter, ranking)
            marks.see(snap, table.edit)
        snap, snapshot, edit = derive(part, table, snap, snapshot, policy, now, counts, counter)
    except BaseException:
        part.derived = None
        raise
    instructions = table.synthetic(instructions_block(snapshot), counts, counter, ranking)
    rules = [
        (table.synthetic(block, counts, counter, ranking), name)
        for block, name in trigger_rules(policy, goal)
    ]
    injected: dict[Facts, str] = {}

    def triggers(part: Partition) -> dict[Facts, Exclusion]:
        excluded, named = gate(policy.triggers, goal, part)
        injected.update(named)
        return excluded

    try:
        update(
            part,
            snap,
            [instructions, *(f for f, _ in rules)],
            snapshot.current_wake_id,
            triggers,
            edit,
        )
    except BaseException:
        table.partitions.pop((agent.tenant, agent.name), None)
        raise
    injected.update((f, name) for f, name in rules)
    work = Work(snapshot, goal, policy, now, counter, cache, table, part, instructions, injected)
    work.tail = tail_of(work)
    return work


def compile_window(
    snapshot: Snapshot,
    goal: Goal,
    policy: WindowPolicy,
    now: datetime,
    *,
    counter: TokenCounter,
    provider: str | None = None,
    cache: CountingCache | None = None,
    renderer: Renderer | None = None,
    alternates: Sequence[tuple[str, str]] = (),
) -> CompiledWindow:
    """Project the snapshot into one provider-ready window and its ledger.

    ``provider`` defaults to the agent's (``anthropic``, ``openai_chat`` — alias ``openai`` —
    or ``openai_responses``). Pass a long-lived ``cache`` to reuse token counts, per-block
    facts and the agent's partition across compiles; pass a ``renderer`` to override
    rendering details. ``alternates`` (provider, model) are rendered too, from the same
    layout, into ``CompiledWindow.alternates`` (a failover's windows). Raises
    :class:`~wakeful.errors.BudgetError` when load-bearing blocks and the current wake cannot
    fit.
    """
    name = resolve_provider(provider or snapshot.agent.provider)
    cache = cache or CountingCache()
    declared = policy
    policy, knobs = with_knobs(declared, goal)  # the firing triggers' knobs (knobs.py)
    work = prepare(snapshot, goal, policy, now, counter, cache)
    freshness(work)
    min_relevance(work)
    leave_out_spent(work)  # ended wakes' evidence not worth carrying (evidence.py)
    admit_evidence(work)  # retrieved hits not worth their tokens (admission.py)
    layers = cap_layers(work)  # declared layers past their share (layers.py)
    marks = work.part.positions  # what finding the blocks these passes look for read
    cache.work.positions_read += marks.read
    marks.read = 0
    try:
        budget(work)
    except BaseException:
        work.part.forget_reads()  # a read may have stopped half-way: start them afresh
        raise
    prioritise_layers(work, layers)  # a higher priority's blocks first (layers.py)
    memo = cache.state(("json",), JsonMemo)
    layout = place(work, memo.dumps, memo.join)
    # Tool schemas and call arguments are the same dicts window after window (blocks are
    # frozen): spelled once, not walked again by every render and hash.
    memo.hold([p.block.tool_input for p in layout.ordered() if p.block.tool_input])
    chosen = renderer or RENDERERS[name]()
    rendered = chosen.render(layout)
    window = record(work, layout, rendered, name, chosen.evidence_text(layout))
    if knobs:  # the ledger names the policy as declared, and each knob that acted
        ledger = window.ledger
        decided = {**ledger.decisions, **knob_decisions(knobs, ledger)}
        ledger = ledger.model_copy(
            update={"decisions": decided, "policy_fingerprint": declared.fingerprint}
        )
        window = window.model_copy(update={"ledger": ledger})
    if not alternates:
        return window
    return window.model_copy(update={"alternates": render_alternates(layout, alternates)})


def render_alternates(layout: Layout, routes: Sequence[tuple[str, str]]) -> dict[str, str]:
    """The same layout as each (provider, model) of ``routes`` is sent it: its request's
    canonical JSON, by ``provider/model``, for a model call that fails over to it."""
    out: dict[str, str] = {}
    for provider, model in routes:
        name = resolve_provider(provider)
        agent = layout.agent.model_copy(update={"provider": name, "model": model})
        moved = dataclasses.replace(layout, agent=agent)
        out[f"{provider}/{model}"] = "".join(
            request_parts(RENDERERS[name]().render(moved), moved.encode)
        )
    return out
