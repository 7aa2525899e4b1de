"""The lexical side of retrieval: tokens, stems, stable term ids, BM25 weights."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wakeful.substrate.lexical import (
    QUERY_STOPWORDS,
    Bm25Encoder,
    analyze,
    porter_stem,
    term_index,
    tokenize,
)

# Examples from Porter's paper ("An algorithm for suffix stripping", 1980).
PORTER = {
    "caresses": "caress", "ponies": "poni", "cats": "cat", "feed": "feed",
    "agreed": "agre", "plastered": "plaster", "motoring": "motor", "sing": "sing",
    "conflated": "conflat", "troubled": "troubl", "sized": "size", "hopping": "hop",
    "falling": "fall", "filing": "file", "happy": "happi", "relational": "relat",
    "conditional": "condit", "digitizer": "digit", "vietnamization": "vietnam",
    "hopefulness": "hope", "formalize": "formal", "electrical": "electr",
    "adjustment": "adjust", "adoption": "adopt", "effective": "effect", "controll": "control",
    "generalizations": "gener", "oscillators": "oscil",
}  # fmt: skip


@pytest.mark.parametrize(("word", "stem"), sorted(PORTER.items()))
def test_porter_stemmer(word: str, stem: str) -> None:
    assert porter_stem(word) == stem


def test_tokenize_lowercases_and_drops_possessives() -> None:
    assert tokenize("Mel's kids’ LGBTQ+ group, 2023!") == ["mel", "kids", "lgbtq", "group", "2023"]


def test_analyze_removes_stopwords_and_stems() -> None:
    assert analyze("I was painting the sunrises") == ["paint", "sunris"]


def test_query_side_drops_question_scaffolding() -> None:
    assert analyze("What kind of car does she likely drive?", QUERY_STOPWORDS) == ["car", "drive"]


def test_term_ids_are_pinned() -> None:
    # Stored sparse vectors depend on these: a change needs a new encoder name.
    assert term_index("paint") == term_index("paint") == 2775526630
    assert term_index("paint") != term_index("painting")


def test_bm25_document_weights_saturate_and_normalise_length() -> None:
    enc = Bm25Encoder()
    once = enc.encode_document("sunrise")
    thrice = enc.encode_document("sunrise sunrise sunrise")
    assert once.indices == thrice.indices
    assert once.values[0] < thrice.values[0] < (enc.k1 + 1)
    long_doc = enc.encode_document("sunrise " + " ".join(f"word{i}" for i in range(60)))
    index = long_doc.indices.index(once.indices[0])
    assert long_doc.values[index] < once.values[0]


def test_bm25_query_weights_are_one_per_distinct_term() -> None:
    q = Bm25Encoder().encode_query("sunrise sunrise lake")
    assert q.values == (1.0, 1.0)
    assert Bm25Encoder().encode_query("what is the").is_empty


def test_encoder_name_records_its_parameters() -> None:
    assert Bm25Encoder().name != Bm25Encoder(k1=0.9).name


@given(st.text(max_size=200))
def test_sparse_vectors_are_sorted_unique_and_positive(text: str) -> None:
    vec = Bm25Encoder().encode_document(text)
    assert list(vec.indices) == sorted(set(vec.indices))
    assert all(v > 0 for v in vec.values)
    assert all(0 <= i < 2**32 for i in vec.indices)
