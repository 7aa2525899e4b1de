"""LoCoMo conversations as the cache benchmark reads them, and its dev/holdout split.

A LoCoMo file (a list of samples, see :mod:`benchmarks.locomo`) holds long
conversations between two people, in dated sessions, with questions whose ``evidence``
names the turns that answer them. The benchmark turns them into agent sessions
(:mod:`benchmarks.cache_shapes`): speaker A is the user, speaker B the agent.

The split keeps tuning honest: shapes are tuned on ``dev`` and reported on ``holdout``;
the two never share a conversation. Any LoCoMo-format file can be read; one that is not
LoCoMo's own release is split by order (:func:`split_ids`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.locomo import normalise_dia_id, turns_of
from wakeful.errors import UserError

__all__ = [
    "DEFAULT_DATASET",
    "SPLITS",
    "Conversation",
    "Episode",
    "Exchange",
    "Line",
    "Question",
    "load_split",
    "parse_conversation",
    "split_ids",
]

DEFAULT_DATASET = Path("../shared/bench/locomo-dev.json")
SPLITS: dict[str, tuple[str, ...]] = {
    "dev": ("conv-26", "conv-30", "conv-41"),
    "holdout": ("conv-42", "conv-43"),
}


@dataclass(frozen=True)
class Line:
    """One turn of the dialogue (a shared photo's caption appended, as LoCoMo shows it)."""

    dia_id: str
    speaker: str
    text: str


@dataclass(frozen=True)
class Exchange:
    """A run of the user's turns and the run of the agent's turns that answers it."""

    ask: tuple[Line, ...]
    reply: tuple[Line, ...]


@dataclass(frozen=True)
class Episode:
    """One dated LoCoMo session. ``exchanges`` pair its turns; a session's opening turns
    by the agent and closing turns by the user have no partner and are left out of them
    (they stay in ``lines``, which tools quote)."""

    number: int
    date: datetime
    lines: tuple[Line, ...]
    exchanges: tuple[Exchange, ...]

    @property
    def date_text(self) -> str:
        return self.date.strftime("%d %B %Y").lstrip("0")


@dataclass(frozen=True)
class Question:
    text: str
    answer: str
    evidence: tuple[str, ...]  # normalised dia ids


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    user: str
    agent: str
    episodes: tuple[Episode, ...]
    questions: tuple[Question, ...]

    def episode_of(self, dia_id: str) -> int:
        """The session number a ``D<session>:<turn>`` id belongs to."""
        return int(dia_id[1:].split(":", 1)[0])


def _exchanges(lines: Sequence[Line], user: str) -> tuple[Exchange, ...]:
    runs: list[tuple[str, list[Line]]] = []
    for line in lines:
        who = "user" if line.speaker == user else "agent"
        if runs and runs[-1][0] == who:
            runs[-1][1].append(line)
        else:
            runs.append((who, [line]))
    if runs and runs[0][0] == "agent":
        runs = runs[1:]
    return tuple(
        Exchange(tuple(runs[n][1]), tuple(runs[n + 1][1])) for n in range(0, len(runs) - 1, 2)
    )


def parse_conversation(sample: dict[str, Any]) -> Conversation:
    """One LoCoMo sample; questions without an answer (the adversarial ones) are skipped."""
    conv = sample.get("conversation")
    if not isinstance(conv, dict) or "speaker_a" not in conv:
        raise UserError("not a LoCoMo sample: it has no 'conversation' with 'speaker_a'")
    user, agent = str(conv["speaker_a"]), str(conv.get("speaker_b", "?"))
    by_session: dict[int, list[Line]] = {}
    dates: dict[int, datetime] = {}
    for t in turns_of(sample):
        by_session.setdefault(t.session, []).append(Line(t.dia_id, t.speaker, t.text))
        dates[t.session] = t.session_date
    episodes = tuple(
        Episode(n, dates[n], tuple(lines), _exchanges(lines, user))
        for n, lines in sorted(by_session.items())
    )
    questions = []
    for q in sample.get("qa") or []:
        evidence = tuple(
            d for d in (normalise_dia_id(str(e)) for e in q.get("evidence") or []) if d
        )
        if "answer" in q and evidence:
            questions.append(Question(str(q["question"]), str(q["answer"]), evidence))
    return Conversation(
        str(sample.get("sample_id", "sample")), user, agent, episodes, tuple(questions)
    )


def split_ids(ids: Sequence[str], split: str) -> tuple[str, ...]:
    """The conversations of ``split`` among a file's ``ids`` (in file order).

    A file holding every conversation of both named splits (LoCoMo's own release) uses
    :data:`SPLITS`. Any other LoCoMo-format file is split by order, as the named splits
    are: its first three fifths (rounded up, leaving at least one) are ``dev``, the rest
    ``holdout``.
    """
    if all(c in ids for s in SPLITS.values() for c in s):
        return SPLITS[split]
    dev = min(math.ceil(len(ids) * 3 / 5), len(ids) - 1)
    return tuple(ids[:dev] if split == "dev" else ids[dev:])


def load_split(path: Path | str, split: str) -> tuple[Conversation, ...]:
    """The conversations of ``split`` ("dev" or "holdout") in a LoCoMo-format file, in
    the split's order (see :func:`split_ids`)."""
    if split not in SPLITS:
        raise UserError(f"unknown split {split!r}: use one of {', '.join(SPLITS)}")
    file = Path(path)
    if not file.is_file():
        raise UserError(f"LoCoMo file {file} not found: pass --dataset with its path")
    try:
        samples = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise UserError(f"LoCoMo file {file} is not JSON ({exc}): pass a LoCoMo file") from exc
    if not isinstance(samples, list):
        raise UserError(f"LoCoMo file {file} is not a list of samples: pass a LoCoMo file")
    by_id = {str(s.get("sample_id")): s for s in samples if isinstance(s, dict)}
    if len(by_id) < 2:
        raise UserError(
            f"LoCoMo file {file} has {len(by_id)} conversation(s): the splits need at "
            "least 2 (one dev, one holdout); pass a file with more"
        )
    chosen = split_ids(list(by_id), split)
    return tuple(parse_conversation(by_id[c]) for c in chosen)
