"""A LoCoMo-format file made here, for tests of the benchmarks that read the dev split.

The real LoCoMo file is benchmark data kept outside the repository (``../shared/bench``,
under its own licence); a test that only needs dialogue of the right shape writes this
one instead, so it runs from a clone of the repository alone. The dialogue is made up.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.cache_locomo import SPLITS

_TOPICS = (
    "the pottery class on Thursdays",
    "a weekend trip to the coast",
    "the new job at the library",
    "training for the autumn half marathon",
    "the community garden by the river",
    "learning to bake sourdough bread",
    "a concert in the old town square",
    "volunteering at the animal shelter",
)


def _session(n: int, a: str, b: str, lines: int) -> list[dict[str, Any]]:
    turns = []
    for i in range(lines):
        topic = _TOPICS[(n * 3 + i) % len(_TOPICS)]
        speaker = a if i % 2 == 0 else b
        text = (
            f"{speaker} here again: about {topic}, I noted detail {n}.{i} and wondered "
            f"whether we should plan the next step together sometime soon."
        )
        turns.append({"speaker": speaker, "dia_id": f"D{n}:{i + 1}", "text": text})
    return turns


def sample(sample_id: str, sessions: int = 3, lines: int = 24) -> dict[str, Any]:
    """One conversation of ``sessions`` sessions of ``lines`` lines, LoCoMo's shape."""
    a, b = "Ana", "Ben"
    conversation: dict[str, Any] = {"speaker_a": a, "speaker_b": b}
    for n in range(1, sessions + 1):
        conversation[f"session_{n}_date_time"] = f"1:56 pm on {n} May, 2023"
        conversation[f"session_{n}"] = _session(n, a, b, lines)
    qa = [{"question": "What class does Ana take?", "answer": "pottery", "evidence": ["D1:1"]}]
    return {"sample_id": sample_id, "conversation": conversation, "qa": qa}


def write_dev_file(path: Path) -> Path:
    """A file holding every conversation of the dev and holdout splits; returns ``path``."""
    ids = [c for split in SPLITS.values() for c in split]
    path.write_text(json.dumps([sample(c) for c in ids]), encoding="utf-8")
    return path
