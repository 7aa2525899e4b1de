"""Retrieval recall on a LoCoMo-format file, for tuning the retrieval pipeline.

``evaluate(path, k_tokens)`` indexes every conversation (one chunk per turn, prefixed with
the session date and the speaker) into an embedded Qdrant Edge shard, one agent per
conversation, asks every question, and reports which fraction of the gold ``dia_id``\\ s the
retriever packs under each token cap, for several pipeline variants side by side:

* ``bm25``   - plain BM25 top-k: no smoothing, neighbours or time boosts (the baseline);
* ``lexical`` - the full pipeline on BM25 alone;
* ``dense``   - the full pipeline on the dense embedder alone;
* ``hybrid``  - the full pipeline, both fused;
* ``default`` - the default configuration (the mode chosen by the embedder).

This measures retrieval only; the window-level benchmark (``wakeful bench recall``) spends
a whole window budget and includes everything else the compiler places.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from wakeful.substrate.embedders import Embedder, HashingEmbedder
from wakeful.substrate.lexical import Bm25Encoder
from wakeful.substrate.retrieval import RetrievalConfig, Retriever
from wakeful.substrate.vectors.base import CollectionSpec, FusionMode, VectorPoint
from wakeful.substrate.vectors.edge import EdgeVectorStore

__all__ = ["DEFAULT_VARIANTS", "chunk_text", "evaluate", "normalise_dia_ids", "parse_session_date"]

TENANT = "locomo"

DEFAULT_VARIANTS: Mapping[str, RetrievalConfig] = {
    "bm25": RetrievalConfig(
        mode=FusionMode.SPARSE,
        dense_fallback=False,
        smoothing=0.0,
        neighbours=False,
        date_boost=0.0,
        when_boost=0.0,
        dense_share=0.0,
    ),
    "lexical": RetrievalConfig(mode=FusionMode.SPARSE, dense_fallback=False),
    "dense": RetrievalConfig(mode=FusionMode.DENSE),
    "hybrid": RetrievalConfig(mode=FusionMode.HYBRID),
    "default": RetrievalConfig(),
}

_DIA = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
_DATE = re.compile(
    r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})", re.IGNORECASE
)
_CAPTION_BOILERPLATE = re.compile(
    r"^(?:a|an)\s+(?:photo|photograph|photography|picture|image)\s+of\s+(?:(?:a|an|the)\s+)?",
    re.IGNORECASE,
)
_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        "january february march april may june july august september october november "
        "december".split()
    )
}


def normalise_dia_ids(raw: Iterable[object]) -> list[str]:
    """``["D8:6; D9:17", "D:11:26", "D"]`` -> ``["D8:6", "D9:17", "D11:26"]``.

    A few gold ids in the public file are malformed: several ids in one string, a stray
    colon, or a bare "D". Parse what can be parsed, drop what cannot.
    """
    out: list[str] = []
    for item in raw:
        for m in _DIA.finditer(str(item)):
            ident = f"D{int(m[1])}:{int(m[2])}"
            if ident not in out:
                out.append(ident)
    return out


def parse_session_date(text: str) -> datetime | None:
    """``"1:56 pm on 8 May, 2023"`` -> 2023-05-08 13:56 UTC; ``None`` when unparseable."""
    m = _DATE.search(text or "")
    if m is None or m[5].lower() not in _MONTHS:
        return None
    hour = int(m[1]) % 12 + (12 if m[3].lower() == "pm" else 0)
    return datetime(int(m[6]), _MONTHS[m[5].lower()], int(m[4]), hour, int(m[2]), tzinfo=UTC)


def chunk_text(turn: Mapping[str, Any], date: datetime | None, raw_date: str) -> str:
    """``[8 May 2023] Caroline: text [photo: dog on a beach]``.

    The date is day-precise (the time of day costs tokens and answers no question), and an
    image's caption stays with the turn that shared it, since questions ask about photos;
    the captioner's "a photo of" boilerplate is dropped because every token counts.
    """
    when = f"{date.day} {date:%B %Y}" if date else raw_date
    text = f"[{when}] {turn.get('speaker', '?')}: {turn.get('text', '')}"
    caption = _CAPTION_BOILERPLATE.sub("", str(turn.get("blip_caption") or "")).strip()
    return f"{text} [photo: {caption}]" if caption else text


def _points(sample: Mapping[str, Any], embedder: Embedder) -> list[VectorPoint]:
    conv = sample["conversation"]
    agent = str(sample.get("sample_id", "conversation"))
    rows: list[dict[str, Any]] = []
    n = 1
    while f"session_{n}" in conv:
        raw_date = str(conv.get(f"session_{n}_date_time", ""))
        date = parse_session_date(raw_date)
        for seq, turn in enumerate(conv[f"session_{n}"]):
            ids = normalise_dia_ids([turn.get("dia_id", "")])
            external = ids[0] if ids else f"S{n}:{seq}"
            rows.append(
                {
                    "chunk_id": f"{agent}:{external}",
                    "text": chunk_text(turn, date, raw_date),
                    "seq": seq,
                    "session_id": f"{agent}:session_{n}",
                    "session_date": date,
                    "external_id": external,
                }
            )
        n += 1
    vectors = embedder.embed([r["text"] for r in rows])
    return [
        VectorPoint(tenant=TENANT, agent=agent, vector=tuple(v), embedder=embedder.name, **row)
        for row, v in zip(rows, vectors, strict=True)
    ]


def _o200k_counter() -> Callable[[str], int]:
    import bpe_openai

    encoding = bpe_openai.get_encoding("o200k_base")

    @lru_cache(maxsize=65_536)
    def count(text: str) -> int:
        return len(encoding.encode(text))

    return count


def evaluate(
    dataset_path: str | Path,
    k_tokens: Sequence[int] = (1000, 2000, 4000, 8000),
    *,
    variants: Mapping[str, RetrievalConfig] = DEFAULT_VARIANTS,
    embedder: Embedder | None = None,
    count_tokens: Callable[[str], int] | None = None,
) -> dict[str, Any]:
    """Recall of gold evidence under each token cap, per pipeline variant.

    ``evidence_recall`` is gold ids packed / gold ids (micro-averaged over every question);
    ``all_evidence`` is the share of questions with every gold id packed.
    """
    data = json.loads(Path(dataset_path).read_text(encoding="utf-8"))
    embedder = embedder or HashingEmbedder()
    count_tokens = count_tokens or _o200k_counter()
    caps = sorted(set(k_tokens))
    hits: dict[tuple[str, int], Counter[str]] = {}
    full: Counter[tuple[str, int]] = Counter()
    gold_total: Counter[str] = Counter()
    questions = 0
    encoder = Bm25Encoder()
    spec = CollectionSpec(
        name="locomo", embedder=embedder.name, dim=embedder.dim, sparse_encoder=encoder.name
    )
    with tempfile.TemporaryDirectory(prefix="wakeful-recall-") as tmp:
        store = EdgeVectorStore(tmp, encoder=encoder)
        try:
            store.ensure_collection(spec)
            for sample in data:
                points = _points(sample, embedder)
                store.upsert(points)
                agent = points[0].agent if points else str(sample.get("sample_id"))
                for qa in sample.get("qa", []):
                    gold = normalise_dia_ids(qa.get("evidence", []))
                    if not gold:
                        continue
                    questions += 1
                    category = str(qa.get("category", "?"))
                    gold_total[category] += len(gold)
                    for name, config in variants.items():
                        retriever = Retriever(store, embedder, config)
                        cands = retriever.candidates(
                            str(qa["question"]), tenant=TENANT, agent=agent, token_cap=caps[-1]
                        )
                        for cap in caps:
                            packed = retriever.pack(
                                cands,
                                tenant=TENANT,
                                agent=agent,
                                token_cap=cap,
                                count_tokens=count_tokens,
                            )
                            got = {h.external_id for h in packed}
                            found = sum(1 for g in gold if g in got)
                            hits.setdefault((name, cap), Counter())[category] += found
                            full[(name, cap)] += found == len(gold)
        finally:
            store.close()
    total = sum(gold_total.values())
    report: dict[str, Any] = {
        "questions": questions,
        "gold_ids": total,
        "embedder": embedder.name,
        "sparse_encoder": encoder.name,
        "variants": {},
    }
    for name in variants:
        per_cap = {}
        for cap in caps:
            by_cat = hits.get((name, cap), Counter())
            per_cap[str(cap)] = {
                "evidence_recall": round(sum(by_cat.values()) / max(total, 1), 4),
                "all_evidence": round(full[(name, cap)] / max(questions, 1), 4),
                "by_category": {c: round(by_cat[c] / gold_total[c], 4) for c in sorted(gold_total)},
            }
        report["variants"][name] = per_cap
    return report
