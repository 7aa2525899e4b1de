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

With ``folds=True`` (``--folds``) the same questions are also asked under each retrieval
configuration of :data:`FOLD_GRID`, and scored leave-one-conversation-out: for each
conversation, the configuration with the best mean ``evidence_in_window`` over the budgets on
the *other* conversations is chosen, and the held-out conversation is scored with it. The
report gives, per budget, the mean and the worst fold, the held-out questions pooled by
category, and which configuration each fold chose. That is how a result carries over to
conversations the pipeline was never tuned on.

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
from wakeful.compiler.blocks import Snapshot
from wakeful.compiler.ledger import INCLUDED
from wakeful.errors import UserError
from wakeful.substrate.embedders import Embedder, HashingEmbedder
from wakeful.substrate.indexing import EventIndex, retrieve, with_hits
from wakeful.substrate.retrieval import RetrievalConfig, Retriever
from wakeful.substrate.store import Store, TenantStore
from wakeful.substrate.vectors.edge import EdgeVectorStore
from wakeful.tokenizers import BpeCounter

__all__ = [
    "FOLD_GRID",
    "INSTRUCTIONS",
    "POLICY_FILE",
    "fold_report",
    "recall_policy",
    "run",
    "temporary_store",
]

POLICY_FILE = Path(__file__).parent / "policies" / "recall.toml"
TENANT = "recall"
# Short on purpose: at a 1,000-token budget every token of prompt is a turn of evidence less.
INSTRUCTIONS = (
    "Answer questions about the conversation between {a} and {b} from its dated excerpts. "
    "Be brief; if the excerpts lack the answer, say so."
)
RECENT_LIMIT = 200
# The retrieval knobs ``--folds`` tunes (fields of RetrievalConfig), each varied alone around
# the defaults: the first entry is the default configuration, the one every plain run uses.
# One knob at a time keeps the grid small enough to run on a shared machine (each entry asks
# every question again; a setting that leaves a question's hits unchanged reuses its window);
# ties go to the earlier entry, so a fold keeps the default unless another does better.
FOLD_GRID: tuple[dict[str, Any], ...] = (
    {},
    {"smoothing": 0.0},
    {"neighbour_lag": 0},
    {"date_boost": 0.0},
    {"when_boost": 0.0},
    {"dense_share": 0.2},
    {"when_durations": False},
)


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


def _select(samples: list[dict[str, Any]], wanted: Sequence[str]) -> list[dict[str, Any]]:
    """The samples whose ``sample_id`` is among ``wanted``, in file order (all: none wanted)."""
    if not wanted:
        return samples
    ids = [str(s.get("sample_id", "")) for s in samples]
    unknown = [w for w in wanted if w not in ids]
    if unknown:
        raise UserError(
            f"no conversation {', '.join(unknown)} in the dataset; its sample ids are "
            f"{', '.join(ids)}"
        )
    return [s for s, ident in zip(samples, ids, strict=True) if ident in wanted]


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

    def merge(self, other: _Tally) -> None:
        self.found.update(other.found)
        self.full.update(other.full)
        self.gold.update(other.gold)
        self.questions += other.questions

    def score(self, keys: Sequence[str]) -> float:
        """Mean ``evidence_in_window`` over ``keys``: what a fold's choice maximises."""
        total = max(sum(self.gold.values()), 1)
        found = [sum(self.found[(k, c)] for c in self.gold) / total for k in keys]
        return sum(found) / max(len(found), 1)

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
    folds: bool = False,
    grid: Sequence[dict[str, Any]] = FOLD_GRID,
    conversations: Sequence[str] = (),
) -> dict[str, Any]:
    """Evidence recall of compiled windows at each budget, with the BM25 and recency
    baselines. ``conversations`` keeps only the samples of those ``sample_id`` s (to iterate
    on some and keep others unseen), ``limit`` then caps their number; ``embedder`` is
    a ``WAKEFUL_EMBEDDER`` value, built as the worker builds it. ``folds`` adds the
    leave-one-conversation-out report over the retrieval configurations of ``grid`` (its
    first entry is the configuration the plain numbers use)."""
    samples = _select(_load(dataset), conversations)[:limit]
    budgets = sorted({int(b) for b in budgets})
    if not budgets or budgets[0] <= 0:
        raise UserError(f"budgets must be positive token counts, got {budgets}")
    configs = [RetrievalConfig(**overrides) for overrides in (grid if folds else [{}])]
    if not configs:
        raise UserError("the folds need at least one retrieval configuration")
    base = load_policy(POLICY_FILE.read_text(encoding="utf-8"), "toml")
    policies = {b: recall_policy(b, base) for b in budgets}
    counter = BpeCounter("o200k_base")
    count: Callable[[str], int] = lru_cache(maxsize=131_072)(counter.count)
    cache = CountingCache()
    chosen = make_embedder(embedder)
    # tallies[config][conversation]; the baselines are counted with the first configuration.
    tallies: list[list[_Tally]] = [[] for _ in configs]
    names: list[str] = []
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
            retrievers = [Retriever(vectors, chosen, c) for c in configs]
            bm25 = Retriever(vectors, chosen, DEFAULT_VARIANTS["bm25"])
            for n, sample in enumerate(samples):
                names.append(str(sample.get("sample_id", f"conversation-{n}")))
                per_config = [_Tally() for _ in configs]
                for row, tally in zip(tallies, per_config, strict=True):
                    row.append(tally)
                malformed += _conversation(
                    ts,
                    index,
                    retrievers,
                    bm25,
                    names[-1],
                    sample,
                    policies,
                    counter,
                    count,
                    cache,
                    per_config,
                    timings,
                )
        finally:
            vectors.close()
    keys = [str(b) for b in budgets]
    tally = _Tally()
    for one in tallies[0]:
        tally.merge(one)
    report: dict[str, Any] = {
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
    }
    if folds:
        report["folds"] = fold_report(names, tallies, [dict(g) for g in grid], keys)
    report["seconds"] = {k: round(v, 1) for k, v in sorted(timings.items())} | {
        "total": round(time.perf_counter() - started, 1)
    }
    return report


def fold_report(
    names: Sequence[str],
    tallies: Sequence[Sequence[_Tally]],
    grid: Sequence[dict[str, Any]],
    keys: Sequence[str],
) -> dict[str, Any]:
    """Leave-one-conversation-out scores from ``tallies[config][conversation]``.

    For each conversation, the configuration with the best mean ``evidence_in_window`` over
    ``keys`` on the other conversations (ties: the earlier one in ``grid``) scores it. One
    configuration serves every budget, as one deployment would. With a single conversation
    there is nothing to tune on: the first configuration is used.
    """
    per_fold: list[dict[str, Any]] = []
    pooled = _Tally()
    for held, name in enumerate(names):
        best, best_score = 0, -1.0
        for c, row in enumerate(tallies):
            train = _Tally()
            for other, tally in enumerate(row):
                if other != held:
                    train.merge(tally)
            score = train.score(keys) if train.questions else 0.0
            if score > best_score:
                best, best_score = c, score
        scored = tallies[best][held]
        pooled.merge(scored)
        per_fold.append(
            {
                "held_out": name,
                "questions": scored.questions,
                "chosen": grid[best],
                "tuning_score": round(best_score, 4),
                "budgets": {k: scored.report(k)["evidence_in_window"] for k in keys},
                "by_category": {k: scored.report(k)["by_category"] for k in keys},
            }
        )
    budgets: dict[str, Any] = {}
    for k in keys:
        scores = [f["budgets"][k] for f in per_fold]
        worst = min(range(len(scores)), key=lambda i: scores[i]) if scores else None
        budgets[k] = {
            "mean": round(sum(scores) / max(len(scores), 1), 4),
            "worst": scores[worst] if worst is not None else None,
            "worst_fold": per_fold[worst]["held_out"] if worst is not None else None,
            "pooled": pooled.report(k),
        }
    return {
        "scheme": "leave one conversation out: the configuration with the best mean "
        "evidence_in_window over the budgets on the other conversations scores the held-out one",
        "tuned": sorted({key for g in grid for key in g}),
        "grid": list(grid),
        # One configuration: nothing is tuned, and each fold's score is that conversation's.
        "fixed_configuration": len(grid) == 1,
        "budgets": budgets,
        "per_fold": per_fold,
    }


def _conversation(
    ts: TenantStore,
    index: EventIndex,
    retrievers: Sequence[Retriever],
    bm25: Retriever,
    agent: str,
    sample: dict[str, Any],
    policies: dict[int, WindowPolicy],
    counter: BpeCounter,
    count: Callable[[str], int],
    cache: CountingCache,
    tallies: Sequence[_Tally],
    timings: defaultdict[str, float],
) -> int:
    """Import, index and ask one conversation's questions under each retriever (tallied in
    ``tallies``, one per retriever); returns malformed gold ids."""
    t0 = time.perf_counter()
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
    baseline = tallies[0]
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
        goal = Goal(kind=GoalKind.MESSAGE, text=question)
        # Configurations often bring the same hits: compile each distinct window once.
        windows: dict[tuple[int, tuple[str, ...]], set[str]] = {}
        for retriever, tally in zip(retrievers, tallies, strict=True):
            tally.question(category, gold)
            index.retriever = retriever
            for budget, policy in policies.items():
                snapshot, key = _retrieve(index, ts, empty, question, policy, horizon, budget)
                if key not in windows:
                    window = compile_window(
                        snapshot, goal, policy, now, counter=counter, cache=cache
                    )
                    windows[key] = _in_window(window, snapshot)
                tally.add(str(budget), category, gold, windows[key])
        # One BM25 ranking deep enough for the largest budget; each budget takes its prefix.
        ranked = bm25.candidates(question, tenant=ts.name, agent=agent, token_cap=max(policies))
        top = [(c.hit.external_id or "", count(c.hit.text)) for c in ranked]
        for budget in policies:
            baseline.add(f"bm25:{budget}", category, gold, _pack(top, budget))
            baseline.add(f"recency:{budget}", category, gold, _pack(newest, budget))
    index.retriever = retrievers[0]
    t3 = time.perf_counter()
    timings["import"] += t1 - t0
    timings["index"] += t2 - t1
    timings["questions"] += t3 - t2
    _say(
        f"{agent}: {turns} turns imported in {t1 - t0:.1f}s, indexed in {t2 - t1:.1f}s; "
        f"{asked} questions x {len(policies)} budgets x {len(retrievers)} configurations "
        f"in {t3 - t2:.1f}s"
    )
    return malformed


def _retrieve(
    index: EventIndex,
    ts: TenantStore,
    empty: Snapshot,
    question: str,
    policy: WindowPolicy,
    horizon: int,
    budget: int,
) -> tuple[Snapshot, tuple[int, tuple[str, ...]]]:
    """The question's snapshot as the compile activity gathers it (``retrieve_into``), and
    a key naming its window: the budget and the hits in order."""
    hits, _ = retrieve(
        index,
        ts,
        empty.agent.name,
        empty.blocks,
        goal_text=question,
        policy=policy,
        max_event_id=horizon,
        max_tokens=budget,
    )
    return with_hits(empty, hits), (budget, tuple(h.chunk_id for h in hits))
