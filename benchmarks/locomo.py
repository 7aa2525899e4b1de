"""Import LoCoMo-format conversations into an agent's event log.

A LoCoMo file is a list of samples; each has ``conversation`` with ``speaker_a``,
``speaker_b``, ``session_N`` (turns with ``speaker``, ``dia_id``, ``text``) and
``session_N_date_time`` ("1:56 pm on 8 May, 2023"). Each turn becomes one ``turn`` event
whose ``external_id`` is the normalised ``dia_id`` and whose ``event_time`` is its session's
date, so retrieval hits carry their session dates. Speaker A is the user side, B the
assistant side. The import is idempotent: step keys derive from the sample and dia_id.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from wakeful.errors import UserError
from wakeful.substrate.records import EventIn
from wakeful.substrate.store import TenantStore

_DIA = re.compile(r"^D\s*:?\s*(\d+)\s*:\s*(\d+)")
_SESSION = re.compile(r"^session_(\d+)$")


def normalise_dia_id(raw: str) -> str | None:
    """``D1:3``, ``D:1:3``, ``D1 :3`` and ``D1:3 `` all become ``D1:3``; junk gives None."""
    m = _DIA.match(str(raw).strip())
    return None if m is None else f"D{int(m.group(1))}:{int(m.group(2))}"


def parse_session_date(text: str) -> datetime:
    """LoCoMo's "1:56 pm on 8 May, 2023" as an aware UTC datetime."""
    cleaned = " ".join(str(text).replace(",", ", ").split()).replace(" ,", ",")
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(cleaned, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise UserError(f"unrecognised LoCoMo session date {text!r}")


@dataclass(frozen=True)
class Turn:
    session: int
    session_date: datetime
    dia_id: str
    speaker: str
    text: str


def sessions(conversation: dict[str, Any]) -> Iterator[tuple[int, datetime, list[dict[str, Any]]]]:
    numbers = sorted(
        int(m.group(1)) for key in conversation if (m := _SESSION.match(key)) is not None
    )
    for n in numbers:
        turns = conversation.get(f"session_{n}") or []
        stamp = conversation.get(f"session_{n}_date_time")
        if turns and stamp:
            yield n, parse_session_date(stamp), turns


def turns_of(sample: dict[str, Any]) -> list[Turn]:
    out: list[Turn] = []
    for n, date, raw in sessions(sample["conversation"]):
        for i, t in enumerate(raw):
            dia = normalise_dia_id(t.get("dia_id", "")) or f"D{n}:{i + 1}"
            text = str(t.get("text", ""))
            if t.get("blip_caption"):
                text += f" [shares a photo: {t['blip_caption']}]"
            out.append(Turn(n, date, dia, str(t.get("speaker", "?")), text))
    return out


def import_sample(ts: TenantStore, agent: str, sample: dict[str, Any]) -> int:
    """Append one conversation to ``agent``'s history; returns the number of turns."""
    conv = sample.get("conversation")
    if not isinstance(conv, dict):
        raise UserError("not a LoCoMo sample: it has no 'conversation' object")
    sample_id = str(sample.get("sample_id", "sample"))
    speaker_a = conv.get("speaker_a")
    events = [
        EventIn(
            step_key=f"locomo:{sample_id}:{t.dia_id}:{i}",
            kind="turn",
            role="user" if t.speaker == speaker_a else "assistant",
            text=f"{t.speaker}: {t.text}",
            session_id=f"{sample_id}:session_{t.session}",
            # Turns of a session share its date; seconds keep their order visible.
            event_time=t.session_date + timedelta(seconds=i),
            external_id=t.dia_id,
            meta={"speaker": t.speaker, "session_date": t.session_date.date().isoformat()},
        )
        for i, t in enumerate(turns_of(sample))
    ]
    for start in range(0, len(events), 500):
        ts.append_events(agent, events[start : start + 500])
    return len(events)
