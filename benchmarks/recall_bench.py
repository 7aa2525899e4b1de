"""``wakeful bench recall``: does the right old turn reach the window?

For each conversation of a LoCoMo-format file, on a real embedded Postgres and a Qdrant Edge
shard in a temporary directory:

1. ``benchmarks.locomo.import_sample`` appends the conversation to an agent's event
   log, and the event index catches up (the same lazy indexing a compile does);
2. every question is compiled the way the compile activity compiles a wake: a snapshot of
   the agent (a new session opened after the last one, ``now`` an hour after its last turn),
   retrieval candidates for the question gathered into it (``retrieve_into``), and the real
   compiler with the ``recall`` policy at the budget under test - the *whole* window's input
   budget, system prompt and framing included;
3. a gold ``dia_id`` counts as in the window when the ledger includes the block of its turn
   and that turn's text is in the rendered request.

``evidence_in_window`` = gold ids in the window / gold ids (micro-averaged);
``all_evidence_in_window`` = questions with every gold id in the window / questions.

Baselines, measured on the same index: ``bm25`` packs plain BM25 top-k turns, and
``recency`` the newest turns, until their text alone fills the budget. They get the whole
budget for turn text (no instructions, no framing): a generous comparison.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

from benchmarks.locomo import import_sample
from benchmarks.retrieval_eval import DEFAULT_VARIANTS, normalise_dia_ids
from wakeful.activities.snapshot_input import build_snapshot
from wakeful.compiler import (
    CountingCache,
    Goal,
    GoalKind,
    WindowPolicy,
    compile_window,
    load_policy,
)
from wakeful.compiler.ledger import INCLUDED
from wakeful.errors import UserError
from wakeful.substrate.embedders import Embedder, HashingEmbedder
from wakeful.substrate.indexing import EventIndex, retrieve_into
from wakeful.substrate.retrieval import Retriever
from wakeful.substrate.store import Store, TenantStore
from wakeful.substrate.vectors.edge import EdgeVectorStore
from wakeful.tokenizers import BpeCounter

__all__ = ["INSTRUCTIONS", "POLICY_FILE", "recall_policy", "run", "temporary_store"]

POLICY_FILE = Path(__file__).parent / "policies" / "recall.toml"
TENANT = "recall"
# Short on purpose: at a 1,000-token budget every token of prompt is a turn of evidence less.
INSTRUCTIONS = (
    "Answer questions about the conversation between {a} and {b} from its dated excerpts. "
    "Be brief; if the excerpts lack the answer, say so."
)
RECENT_LIMIT = 200


def _say(message: str) -> None:
    print(f"[recall] {message}", file=sys.stderr, flush=True)


@contextmanager
def temporary_store(prefix: str) -> Iterator[tuple[Store, Path]]:
    """A migrated store on a throwaway embedded Postgres, and a scratch directory."""
    from wakeful.testing.servers import embedded_postgres

    with embedded_postgres(prefix) as pg:
        store = Store.connect(pg.url)
        try:
            yield store, pg.root
        finally:
            store.close()


def recall_policy(budget: int, base: WindowPolicy | None = None) -> WindowPolicy:
    """The recall policy with an input budget of ``budget`` tokens (output reserve kept)."""
    base = base or load_policy(POLICY_FILE.read_text(encoding="utf-8"), "toml")
    data = base.model_dump(mode="json")
    data["budget"]["context_limit"] = budget + base.budget.output_reserve
    return WindowPolicy.model_validate(data)


def _load(dataset: str | Path) -> list[dict[str, Any]]:
    path = Path(dataset)
    if not path.exists():
        raise UserError(f"no dataset at {path}; pass --dataset PATH to a LoCoMo-format file")
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, list) or not all(isinstance(s, dict) for s in data):
        raise UserError(f"{path} is not a LoCoMo file: expected a JSON list of samples")
    return data


class _Tally:
    """Gold ids found, per budget (or baseline) and category."""

    def __init__(self) -> None:
        self.found: Counter[tuple[str, str]] = Counter()
        self.full: Counter[str] = Counter()
        self.gold: Counter[str] = Counter()
        self.questions = 0

    def question(self, category: str, gold: Sequence[str]) -> None:
        self.questions += 1
        self.gold[category] += len(gold)

    def add(self, key: str, category: str, gold: Sequence[str], got: set[str]) -> None:
        n = sum(1 for g in gold if g in got)
        self.found[(key, category)] += n
        self.full[key] += n == len(gold)

    def report(self, key: str) -> dict[str, Any]:
        total = sum(self.gold.values())
        found = {c: self.found[(key, c)] for c in self.gold}
        return {
            "evidence_in_window": round(sum(found.values()) / max(total, 1), 4),
            "all_evidence_in_window": round(self.full[key] / max(self.questions, 1), 4),
            "by_category": {c: round(found[c] / self.gold[c], 4) for c in sorted(self.gold)},
        }


def _in_window(window: Any, snapshot: Any) -> set[str]:
    """External ids of turns the ledger includes and the rendered request carries."""
    blocks = {b.id: b for b in snapshot.blocks}
    request = window.request_json
    out = set()
    for row in window.ledger.rows:
        block = blocks.get(row.block_id)
        if row.status != INCLUDED or block is None or block.external_id is None:
            continue
        if json.dumps(block.text, ensure_ascii=False)[1:-1] in request:
            out.add(block.external_id)
    return out


def _pack(items: Sequence[tuple[str, int]], budget: int) -> set[str]:
    """External ids of items taken in order while their tokens fit the budget."""
    out, used = set(), 0
    for ident, tokens in items:
        if used + tokens <= budget:
            used += tokens
            out.add(ident)
    return out


def make_embedder(name: str) -> Embedder:
    """The embedder ``WAKEFUL_EMBEDDER=name`` gives a worker (hashing: the index default)."""
    from wakeful.worker.serve import embedder_for
    from wakeful.worker.settings import Settings

    try:
        settings = Settings(embedder=name)
    except ValueError as exc:  # pydantic's ValidationError: one line naming the choices
        first = exc.errors()[0]["msg"] if hasattr(exc, "errors") else str(exc)
        raise UserError(f"--embedder {name!r}: {first}") from None
    return embedder_for(settings) or HashingEmbedder()


def run(
    dataset: str | Path = "../shared/bench/locomo-dev.json",
    budgets: Sequence[int] = (1000, 2000, 4000, 8000),
    *,
    limit: int | None = None,
    embedder: str = "hashing",
) -> dict[str, Any]:
    """Evidence recall of compiled windows at each budget, with the BM25 and recency
    baselines. ``limit`` caps the number of conversations (for quick runs); ``embedder`` is
    a ``WAKEFUL_EMBEDDER`` value, built as the worker builds it."""
    samples = _load(dataset)[:limit]
    budgets = sorted({int(b) for b in budgets})
    if not budgets or budgets[0] <= 0:
        raise UserError(f"budgets must be positive token counts, got {budgets}")
    base = load_policy(POLICY_FILE.read_text(encoding="utf-8"), "toml")
    policies = {b: recall_policy(b, base) for b in budgets}
    counter = BpeCounter("o200k_base")
    count: Callable[[str], int] = lru_cache(maxsize=131_072)(counter.count)
    cache = CountingCache()
    chosen = make_embedder(embedder)
    tally = _Tally()
    malformed = 0
    timings: defaultdict[str, float] = defaultdict(float)  # seconds per phase
    started = time.perf_counter()
    mode = "?"
    with temporary_store("wkrc") as (store, root):
        ts = store.tenant(TENANT)
        vectors = EdgeVectorStore(root / "qdrant")
        try:
            index = EventIndex(vectors, chosen, count_tokens=count)
            mode = index.mode.value
            bm25 = Retriever(vectors, chosen, DEFAULT_VARIANTS["bm25"])
            for sample in samples:
                malformed += _conversation(
                    ts, index, bm25, sample, policies, counter, count, cache, tally, timings
                )
        finally:
            vectors.close()
    keys = [str(b) for b in budgets]
    return {
        "n": tally.questions,
        "gold_ids": sum(tally.gold.values()),
        "dropped_gold_ids": malformed,
        "budgets": {k: tally.report(k) for k in keys},
        "baselines": {
            name: {k: tally.report(f"{name}:{k}") for k in keys} for name in ("bm25", "recency")
        },
        "policy": base.name,
        "counter": counter.name,
        "embedder": chosen.name,
        "retrieval_mode": mode,
        "seconds": {k: round(v, 1) for k, v in sorted(timings.items())}
        | {"total": round(time.perf_counter() - started, 1)},
    }


def _conversation(
    ts: TenantStore,
    index: EventIndex,
    bm25: Retriever,
    sample: dict[str, Any],
    policies: dict[int, WindowPolicy],
    counter: BpeCounter,
    count: Callable[[str], int],
    cache: CountingCache,
    tally: _Tally,
    timings: defaultdict[str, float],
) -> int:
    """Import, index and ask one conversation's questions; returns malformed gold ids."""
    t0 = time.perf_counter()
    agent = str(sample.get("sample_id", f"conversation-{tally.questions}"))
    conv = sample.get("conversation") or {}
    instructions = INSTRUCTIONS.format(a=conv.get("speaker_a", "A"), b=conv.get("speaker_b", "B"))
    spec = {
        "name": agent,
        "model": "claude-sonnet-4-5",
        "provider": "anthropic",
        "instructions": instructions,
        "tools": [],
    }
    ts.upsert_agent(
        agent, model="claude-sonnet-4-5", provider="anthropic", instructions="", spec=spec
    )
    turns = import_sample(ts, agent, sample)
    events = ts.events(agent)
    horizon = events[-1].id
    now = max(e.event_time for e in events) + timedelta(hours=1)
    t1 = time.perf_counter()
    index.catch_up(ts, agent, upto=horizon)
    t2 = time.perf_counter()
    newest = [(e.external_id or "", count(e.text)) for e in reversed(events) if e.kind == "turn"]
    session = f"{agent}:questions"
    empty = build_snapshot(
        ts,
        spec,
        session_id=session,
        wake_id=None,
        max_event_id=horizon,
        as_of=now,
        recent_limit=RECENT_LIMIT,
    )
    malformed = asked = 0
    for qa in sample.get("qa", []):
        raw = qa.get("evidence") or []
        gold = normalise_dia_ids(raw)
        malformed += sum(1 for r in raw if not normalise_dia_ids([r]))
        if not gold or not str(qa.get("question", "")).strip():
            continue
        asked += 1
        question = str(qa["question"])
        category = str(qa.get("category", "?"))
        tally.question(category, gold)
        goal = Goal(kind=GoalKind.MESSAGE, text=question)
        # One BM25 ranking deep enough for the largest budget; each budget takes its prefix.
        deepest = max(policies)
        ranked = bm25.candidates(question, tenant=ts.name, agent=agent, token_cap=deepest)
        top = [(c.hit.external_id or "", count(c.hit.text)) for c in ranked]
        for budget, policy in policies.items():
            snapshot, _ = retrieve_into(
                index,
                ts,
                empty,
                goal_text=question,
                policy=policy,
                max_event_id=horizon,
                max_tokens=budget,
            )
            window = compile_window(snapshot, goal, policy, now, counter=counter, cache=cache)
            tally.add(str(budget), category, gold, _in_window(window, snapshot))
            tally.add(f"bm25:{budget}", category, gold, _pack(top, budget))
            tally.add(f"recency:{budget}", category, gold, _pack(newest, budget))
    t3 = time.perf_counter()
    timings["import"] += t1 - t0
    timings["index"] += t2 - t1
    timings["questions"] += t3 - t2
    _say(
        f"{agent}: {turns} turns imported in {t1 - t0:.1f}s, indexed in {t2 - t1:.1f}s; "
        f"{asked} questions x {len(policies)} budgets in {t3 - t2:.1f}s"
    )
    return malformed
