"""WAKEFUL_EMBEDDER=wordllama: the 256-dimension model shipped inside the wordllama wheel,
loaded offline (the ``semantic`` extra). Its name carries the package version, model and
dimension, so its vectors never meet another embedder's: an index it fills starts from the
first event, and a store another embedder filled is refused with one line naming both."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

import pytest

from tests.conversation import conversation
from wakeful.errors import ConfigError
from wakeful.substrate.embedders import HashingEmbedder, WordLlamaEmbedder
from wakeful.substrate.indexing import EventIndex
from wakeful.substrate.store import TenantStore
from wakeful.substrate.vectors.edge import EdgeVectorStore
from wakeful.substrate.vectors.memory import MemoryVectorStore
from wakeful.worker.serve import embedder_for
from wakeful.worker.settings import load_settings

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("WAKEFUL_"):
            monkeypatch.delenv(name)


@pytest.fixture(scope="module")
def wordllama() -> WordLlamaEmbedder:
    return WordLlamaEmbedder()


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_the_setting_builds_it_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WAKEFUL_EMBEDDER", "wordllama")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    chosen = embedder_for(load_settings())
    assert isinstance(chosen, WordLlamaEmbedder)
    assert chosen.name == f"wordllama-{version('wordllama')}:l2_supercat:d256"
    assert chosen.dim == 256
    monkeypatch.setenv("WAKEFUL_EMBEDDER", "wordllama:l3_supercat")  # not in the wheel
    with pytest.raises(ConfigError) as err:
        embedder_for(load_settings())
    assert str(err.value).startswith("WAKEFUL_EMBEDDER=wordllama:l3_supercat: wordllama model")
    assert "\n" not in str(err.value)


def test_vectors_are_unit_length_and_close_for_close_meanings(
    wordllama: WordLlamaEmbedder,
) -> None:
    port, also, lunch, empty = wordllama.embed(
        [
            "The staging database listens on port 5433.",
            "Which port does the staging database use?",
            "We had pizza with olives for lunch.",
            "",
        ]
    )
    for vec in (port, also, lunch, empty):
        assert len(vec) == 256 and math.isclose(math.sqrt(_cosine(vec, vec)), 1.0, rel_tol=1e-6)
    assert _cosine(port, also) > _cosine(port, lunch)
    assert wordllama.embed(["The staging database listens on port 5433."]) == [port]
    assert wordllama.embed([]) == []


def test_without_the_extra_selecting_it_is_one_line_naming_the_extra() -> None:
    # A process where the package cannot be imported (None in sys.modules blocks an import).
    code = (
        "import sys; sys.modules['wordllama'] = None\n"
        "from wakeful.errors import ConfigError\n"
        "from wakeful.worker.serve import embedder_for\n"
        "from wakeful.worker.settings import Settings\n"
        "try:\n"
        "    embedder_for(Settings(embedder='wordllama'))\n"
        "except ConfigError as exc:\n"
        "    print(exc)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("WAKEFUL_")}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines() == [
        "WAKEFUL_EMBEDDER=wordllama: WordLlamaEmbedder needs the optional wordllama package: "
        "pip install 'wakeful[semantic]' (or use HashingEmbedder)"
    ]


def _seed(ts: TenantStore) -> int:
    ts.upsert_agent("a1", model="m", provider="anthropic", instructions="i", spec={})
    texts = [
        "The deploy key rotates every Tuesday at noon.",
        "Noted: rotation on Tuesdays.",
        "Our database is Postgres 16 on db-2.",
    ]
    events = conversation(texts, session_id="s1", start=T0, step_key="k")
    return ts.append_events("a1", events)[-1].id


def test_switching_to_it_indexes_every_event_again_and_never_mixes(
    tenant: TenantStore, wordllama: WordLlamaEmbedder, tmp_path: Path
) -> None:
    last = _seed(tenant)
    hashing = EventIndex(MemoryVectorStore(), HashingEmbedder(), count_tokens=len)
    assert hashing.catch_up(tenant, "a1", upto=last) == 3
    # Its own cursor: every event again, not "nothing new" after the hashing index.
    semantic = EventIndex(MemoryVectorStore(), wordllama, count_tokens=len)
    assert semantic.key != hashing.key
    assert semantic.catch_up(tenant, "a1", upto=last) == 3
    hits = semantic.gather(
        tenant, "a1", query="which database do we run", max_event_id=last, token_cap=500
    )
    assert hits and hits[0].text == "Our database is Postgres 16 on db-2."
    # A shard the hashing embedder filled is rebuilt for this one and indexed again.
    shard = tmp_path / "shard"
    first = EdgeVectorStore(shard)
    try:
        assert (
            EventIndex(first, HashingEmbedder(), count_tokens=len).catch_up(tenant, "a1", upto=last)
            == 3
        )
    finally:
        first.close()
    again = EdgeVectorStore(shard)
    try:
        reopened = EventIndex(again, wordllama, count_tokens=len)
        assert reopened.catch_up(tenant, "a1", upto=last) == 3
        hits = reopened.gather(
            tenant, "a1", query="which database do we run", max_event_id=last, token_cap=500
        )
        assert hits and hits[0].text == "Our database is Postgres 16 on db-2."
    finally:
        again.close()
