"""The recall evaluation helper, on a tiny LoCoMo-shaped file written by the test."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from benchmarks.retrieval_eval import (
    chunk_text,
    evaluate,
    normalise_dia_ids,
    parse_session_date,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (["D1:3"], ["D1:3"]),
        (["D8:6; D9:17"], ["D8:6", "D9:17"]),
        (["D:11:26"], ["D11:26"]),
        (["D11:26 "], ["D11:26"]),
        (["D30:05"], ["D30:5"]),
        (["D"], []),
        ([""], []),
        (["D1:3", "D1:3"], ["D1:3"]),
    ],
)
def test_dia_ids_are_normalised(raw: list[str], expected: list[str]) -> None:
    assert normalise_dia_ids(raw) == expected


def test_session_dates_parse() -> None:
    assert parse_session_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_session_date("12:09 am on 13 September, 2023") == datetime(
        2023, 9, 13, 0, 9, tzinfo=UTC
    )
    assert parse_session_date("sometime") is None


def test_chunk_text_has_date_speaker_and_caption() -> None:
    turn = {"speaker": "Mel", "text": "Look!", "blip_caption": "a photo of a lake"}
    date = datetime(2023, 5, 8, tzinfo=UTC)
    assert chunk_text(turn, date, "") == "[8 May 2023] Mel: Look! [photo: lake]"
    assert chunk_text({"speaker": "Mel", "text": "Hi"}, None, "raw") == "[raw] Mel: Hi"


def _dataset(path: Path) -> Path:
    turns = [
        ("Ann", "I adopted a greyhound named Pixel."),
        ("Bob", "Congratulations! How old is she?"),
        ("Ann", "She is three years old."),
        ("Bob", "I started learning the cello last month."),
        ("Ann", "The cello is a beautiful instrument."),
    ]
    conversation = {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": s, "text": t, "dia_id": f"D1:{i + 1}"} for i, (s, t) in enumerate(turns)
        ],
    }
    qa = [
        {"question": "What is the name of Ann's greyhound?", "evidence": ["D1:1"], "category": 1},
        {"question": "Which instrument is Bob learning?", "evidence": ["D:1:4"], "category": 2},
        {"question": "How old is the dog?", "evidence": ["D1:3; D1:1"], "category": 1},
        {"question": "Broken evidence", "evidence": ["D"], "category": 5},
    ]
    path.write_text(json.dumps([{"sample_id": "c1", "conversation": conversation, "qa": qa}]))
    return path


def test_evaluate_reports_recall_per_variant_and_cap(tmp_path: Path) -> None:
    report = evaluate(
        _dataset(tmp_path / "tiny.json"), [100, 10], count_tokens=lambda t: len(t.split())
    )
    assert (report["questions"], report["gold_ids"]) == (3, 4)
    assert set(report["variants"]) == {"bm25", "lexical", "dense", "hybrid", "default"}
    wide = report["variants"]["hybrid"]["100"]
    assert wide["evidence_recall"] == 1.0 and wide["all_evidence"] == 1.0
    assert set(wide["by_category"]) == {"1", "2"}
    narrow = report["variants"]["bm25"]["10"]
    assert narrow["evidence_recall"] < 1.0
