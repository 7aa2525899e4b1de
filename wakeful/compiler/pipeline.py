"""``compile_window``: (snapshot, goal, policy, now) -> CompiledWindow, a pure function.

The passes run in this fixed order; each is one module with its own tests:

    1. triggers   goal-driven injection and gating of rules and skills   (triggers.py)
    2. select     current wake vs candidates, tool pairs, orphans         (select.py)
    3. dedupe     exact duplicates and supersession keys                  (dedupe.py)
    4. freshness  stale blocks excluded or flagged                        (freshness.py)
    5. collapse   resolved tool output to a one-line note                 (collapse.py)
    6. rank       recency × importance × relevance                        (rank.py)
    7. budget     per-bucket allocations, pressure, BudgetError           (budget.py)
    8. place      window order, evidence edges-first                      (place.py)
    9. render     provider syntax and cache breakpoints                   (render/)
   10. record     ledger, segment and prefix hashes                       (record.py)

Same inputs, same bytes: no clock (``now`` is an argument), no randomness, no I/O, no
iteration over unordered collections, hashes from blake2b. The optional ``cache`` only
saves work; it never changes the output.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from wakeful.compiler.blocks import Block, BlockKind, Goal, Snapshot
from wakeful.compiler.budget import budget
from wakeful.compiler.collapse import collapse
from wakeful.compiler.dedupe import dedupe
from wakeful.compiler.freshness import freshness
from wakeful.compiler.place import place
from wakeful.compiler.policy import Policy
from wakeful.compiler.rank import rank
from wakeful.compiler.record import record
from wakeful.compiler.render import PROVIDER_ALIASES, RENDERERS, Renderer
from wakeful.compiler.select import check_unique_ids, select
from wakeful.compiler.tokens import CountingCache, TokenCounter
from wakeful.compiler.triggers import apply_triggers
from wakeful.compiler.window import CompiledWindow
from wakeful.compiler.work import Work, facts_of
from wakeful.errors import ConfigError, UserError

PASSES: tuple[Callable[[Work], None], ...] = (
    apply_triggers,
    select,
    dedupe,
    freshness,
    collapse,
    rank,
    budget,
)


def resolve_provider(provider: str) -> str:
    name = PROVIDER_ALIASES.get(provider, provider)
    if name not in RENDERERS:
        known = ", ".join([*RENDERERS, *PROVIDER_ALIASES])
        raise ConfigError(f"unknown provider {provider!r}; expected one of {known}")
    return name


def prepare(
    snapshot: Snapshot,
    goal: Goal,
    policy: Policy,
    now: datetime,
    counter: TokenCounter,
    cache: CountingCache,
) -> Work:
    """The working set with the agent's instructions as a synthetic stable block."""
    if now.tzinfo is None:
        raise UserError("now must be timezone-aware (UTC)")
    facts = facts_of(snapshot.blocks, cache, counter, policy.ranking)
    work = Work(snapshot, goal, policy, now, counter, cache, facts, n_snapshot=len(facts))
    check_unique_ids(work)
    agent = snapshot.agent
    work.instructions = work.add_synthetic(
        Block(
            id="agent:instructions",
            kind=BlockKind.SYSTEM_RULE,
            text=agent.instructions,
            source=f"agent:{agent.tenant}/{agent.name}",
            seq=-1,
            load_bearing=True,
            importance=1.0,
        )
    )
    return work


def compile_window(
    snapshot: Snapshot,
    goal: Goal,
    policy: Policy,
    now: datetime,
    *,
    counter: TokenCounter,
    provider: str | None = None,
    cache: CountingCache | None = None,
    renderer: Renderer | None = None,
) -> CompiledWindow:
    """Project the snapshot into one provider-ready window and its ledger.

    ``provider`` defaults to the agent's (``anthropic``, ``openai_chat`` — alias ``openai`` —
    or ``openai_responses``). Pass a long-lived ``cache`` to reuse token counts and per-block
    facts across compiles; pass a ``renderer`` to override rendering details.
    Raises :class:`~wakeful.errors.BudgetError` when load-bearing blocks and the current
    wake cannot fit.
    """
    name = resolve_provider(provider or snapshot.agent.provider)
    work = prepare(snapshot, goal, policy, now, counter, cache or CountingCache())
    for run in PASSES:
        run(work)
    layout = place(work)
    rendered = (renderer or RENDERERS[name]()).render(layout)
    return record(work, layout, rendered, name)
