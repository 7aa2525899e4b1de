"""LoCoMo-format import on a small conversation made here (the dataset is benchmark data)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from benchmarks.locomo import import_sample, normalise_dia_id, parse_session_date
from wakeful.errors import UserError
from wakeful.substrate.store import TenantStore

SAMPLE = {
    "sample_id": "conv-x",
    "conversation": {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I moved to Lisbon."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Nice!", "blip_caption": "a tram"},
        ],
        "session_2_date_time": "9:00 am on 1 June, 2023",
        "session_2": [{"speaker": "Ana", "dia_id": "D:2:1", "text": "Started a pottery class."}],
    },
}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("D1:3", "D1:3"), ("D:1:3", "D1:3"), (" D10:02 ", "D10:2"), ("D1 :3", "D1:3"), ("x", None)],
)
def test_dia_ids_are_normalised(raw: str, expected: str | None) -> None:
    assert normalise_dia_id(raw) == expected


def test_session_dates_parse() -> None:
    assert parse_session_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    with pytest.raises(UserError, match="unrecognised"):
        parse_session_date("yesterday")


def test_import_keeps_dia_ids_dates_and_is_idempotent(tenant: TenantStore) -> None:
    tenant.upsert_agent("mem", model="m", provider="anthropic", instructions="", spec={})
    assert import_sample(tenant, "mem", SAMPLE) == 3
    assert import_sample(tenant, "mem", SAMPLE) == 3
    events = tenant.events("mem")
    assert [e.external_id for e in events] == ["D1:1", "D1:2", "D2:1"]
    assert [e.role for e in events] == ["user", "assistant", "user"]
    assert events[1].text == "Ben: Nice! [shares a photo: a tram]"
    assert events[2].event_time.date().isoformat() == "2023-06-01"
    assert events[2].session_id == "conv-x:session_2"


def test_a_file_that_is_not_locomo_is_refused(tenant: TenantStore) -> None:
    tenant.upsert_agent("mem", model="m", provider="anthropic", instructions="", spec={})
    with pytest.raises(UserError, match="conversation"):
        import_sample(tenant, "mem", {"qa": []})
