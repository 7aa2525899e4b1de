"""``--dataset`` reads any LoCoMo-format file, not only LoCoMo's own release."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.cache_locomo import SPLITS, load_split, split_ids
from wakeful.errors import UserError


def _sample(sample_id: str) -> dict[str, Any]:
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": f"Hi, this is {sample_id}."},
                {"speaker": "Bo", "dia_id": "D1:2", "text": "Hello!"},
            ],
        },
        "qa": [],
    }


def _write(path: Path, ids: list[str]) -> Path:
    path.write_text(json.dumps([_sample(i) for i in ids]), encoding="utf-8")
    return path


def test_a_file_of_other_conversations_is_split_by_order(tmp_path: Path) -> None:
    file = _write(tmp_path / "mine.json", ["a", "b", "c", "d", "e", "f"])
    dev = load_split(file, "dev")
    holdout = load_split(file, "holdout")
    assert [c.sample_id for c in dev] == ["a", "b", "c", "d"]
    assert [c.sample_id for c in holdout] == ["e", "f"]
    assert dev[0].episodes[0].lines[0].text == "Hi, this is a."


def test_locomos_own_release_keeps_the_named_splits() -> None:
    ids = ["conv-1", *SPLITS["holdout"], "conv-2", *SPLITS["dev"]]
    assert split_ids(ids, "dev") == SPLITS["dev"]
    assert split_ids(ids, "holdout") == SPLITS["holdout"]
    # A file with only some of them is any other file: split by its order.
    assert split_ids(["conv-42", "x", "y"], "holdout") == ("y",)


def test_two_conversations_make_one_of_each(tmp_path: Path) -> None:
    file = _write(tmp_path / "two.json", ["a", "b"])
    assert [c.sample_id for c in load_split(file, "dev")] == ["a"]
    assert [c.sample_id for c in load_split(file, "holdout")] == ["b"]


def test_files_that_cannot_be_split_are_named(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="has 1 conversation"):
        load_split(_write(tmp_path / "one.json", ["a"]), "dev")
    (tmp_path / "obj.json").write_text('{"sample_id": "a"}', encoding="utf-8")
    with pytest.raises(UserError, match="not a list of samples"):
        load_split(tmp_path / "obj.json", "dev")
