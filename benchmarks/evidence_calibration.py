"""How much evidence a question is worth: the floors of ``compiler.admission``, calibrated.

Every conversation of the dev split is indexed as ``benchmarks.retrieval_eval`` indexes it;
each of its questions (and each of the user's later turns, as statements) retrieves with
the default pipeline under a 4,000-token cap. For every (overlap floor, token cap) pair the
hits the admission rule would keep are scored: gold turns kept, tokens spent. Cross-
validated leave-one-conversation-out: the pair that maximises ``value * gold - tokens`` on
the other conversations is chosen and scored on the held-out one. ``value`` is what one
gold turn is worth in input tokens (about what a wake asked again would cost).

Run: ``python -m benchmarks.evidence_calibration [dataset] [value]``. Measured with the
o200k counter on ``locomo-dev.json``: for a value of 1,000 to 4,000 tokens every fold
chooses cap 500 (floor 0 or 0.2: about 80 % of the gold turns a 4,000-token cap finds, for
an eighth of its tokens), the default; for 8,000, cap 1,000 and floor 0 (87-89 %). A floor
well above 0 never pays for questions (the answer is often a neighbour that shares none of
the question's words). A statement's hits sharing half its words average
about 200 tokens where unfiltered ones fill the cap.
"""

from __future__ import annotations

import itertools
import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any, NamedTuple

from benchmarks.cache_locomo import SPLITS
from benchmarks.retrieval_eval import TENANT, _o200k_counter, _points, normalise_dia_ids
from wakeful.compiler.overlap import overlap, terms
from wakeful.substrate.embedders import HashingEmbedder
from wakeful.substrate.lexical import Bm25Encoder
from wakeful.substrate.retrieval import RetrievalConfig, Retriever
from wakeful.substrate.vectors.base import CollectionSpec
from wakeful.substrate.vectors.edge import EdgeVectorStore

__all__ = ["CAPS", "FLOORS", "Hit", "calibrate", "collect"]

FLOORS = (0.0, 0.2, 0.25, 0.34, 0.4, 0.5, 0.6)
CAPS = (500, 1000, 1500, 2000, 3000, 4000)


class Hit(NamedTuple):
    conversation: str
    question: bool
    ask: int
    rank: int
    neighbour: bool
    overlap: float
    tokens: int
    gold: bool


def collect(dataset: Path, cap: int = 4000) -> list[Hit]:
    data = json.loads(dataset.read_text(encoding="utf-8"))
    embedder, encoder, count = HashingEmbedder(), Bm25Encoder(), _o200k_counter()
    spec = CollectionSpec(
        name="locomo", embedder=embedder.name, dim=embedder.dim, sparse_encoder=encoder.name
    )
    out: list[Hit] = []
    with tempfile.TemporaryDirectory(prefix="wakeful-calibration-") as tmp:
        store = EdgeVectorStore(tmp, encoder=encoder)
        try:
            store.ensure_collection(spec)
            for sample in data:
                if sample["sample_id"] not in SPLITS["dev"]:
                    continue
                points = _points(sample, embedder)
                store.upsert(points)
                agent = points[0].agent
                retriever = Retriever(store, embedder, RetrievalConfig())
                asks: list[tuple[bool, str, set[str]]] = [
                    (True, str(qa["question"]), set(normalise_dia_ids(qa.get("evidence", []))))
                    for qa in sample["qa"]
                    if normalise_dia_ids(qa.get("evidence", []))
                ]
                conv = sample["conversation"]
                n = 2
                while f"session_{n}" in conv:
                    asks += [
                        (False, t["text"], set())
                        for t in conv[f"session_{n}"]
                        if t["speaker"] == conv["speaker_a"]
                    ]
                    n += 1
                for i, (question, text, gold) in enumerate(asks):
                    found = retriever.candidates(text, tenant=TENANT, agent=agent, token_cap=cap)
                    packed = retriever.pack(
                        found, tenant=TENANT, agent=agent, token_cap=cap, count_tokens=count
                    )
                    words = terms(text)
                    out += [
                        Hit(
                            sample["sample_id"],
                            question,
                            i,
                            h.rank,
                            h.neighbour_of is not None,
                            overlap(words, h.text),
                            h.tokens,
                            h.external_id in gold,
                        )
                        for h in packed
                    ]
        finally:
            store.close()
    return out


def admitted(hits: list[Hit], floor: float, cap: int) -> tuple[int, int, int]:
    """(gold turns kept, tokens kept, asks) under the admission rule: hits in packing order,
    a hit in when it shares ``floor`` of the ask's words, a neighbour when its hit is."""
    by_ask: dict[tuple[str, int], list[Hit]] = defaultdict(list)
    for h in hits:
        by_ask[(h.conversation, h.ask)].append(h)
    gold = tokens = 0
    for group in by_ask.values():
        used, last = 0, False
        for h in sorted(group, key=lambda h: h.rank):
            ok = last if h.neighbour else h.overlap >= floor
            last = ok if not h.neighbour else last
            if ok and used + h.tokens <= cap:
                used += h.tokens
                gold += h.gold
        tokens += used
    return gold, tokens, len(by_ask)


def _per_ask(hits: list[Hit], floor: float, cap: int) -> int:
    _, tokens, asks = admitted(hits, floor, cap)
    return round(tokens / max(asks, 1))


def calibrate(hits: list[Hit], value: float) -> dict[str, Any]:
    questions = [h for h in hits if h.question]
    folds = {}
    for held in sorted({h.conversation for h in questions}):
        train = [h for h in questions if h.conversation != held]
        test = [h for h in questions if h.conversation == held]

        def worth(pair: tuple[float, int], on: list[Hit] = train) -> float:
            gold, tokens, _ = admitted(on, *pair)
            return value * gold - tokens

        floor, cap = max(itertools.product(FLOORS, CAPS), key=worth)
        gold, tokens, asks = admitted(test, floor, cap)
        all_gold, all_tokens, _ = admitted(test, 0.0, max(CAPS))
        folds[held] = {
            "floor": floor,
            "cap": cap,
            "gold_kept": f"{gold}/{all_gold}",
            "tokens_per_ask": round(tokens / max(asks, 1)),
            "tokens_per_ask_uncut": round(all_tokens / max(asks, 1)),
        }
    statements = [h for h in hits if not h.question]
    return {
        "value_tokens": value,
        "questions": folds,
        "statements_tokens_per_ask": {
            f"floor {f:g} cap {c}": _per_ask(statements, f, c)
            for f, c in ((0.0, 4000), (0.5, 1000), (0.5, 250))
        },
    }


def main(argv: list[str] | None = None) -> None:
    args = (argv if argv is not None else sys.argv[1:]) or []
    dataset = Path(args[0] if args else "../shared/bench/locomo-dev.json")
    value = float(args[1]) if len(args) > 1 else 8000.0
    print(json.dumps(calibrate(collect(dataset), value), indent=2))


if __name__ == "__main__":
    main()
