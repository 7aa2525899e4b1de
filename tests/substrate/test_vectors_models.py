"""The value types of the vector layer: ids, scoping, specs, fusion."""

from __future__ import annotations

import importlib
from datetime import datetime

import pytest
from pydantic import ValidationError

from wakeful.substrate.vectors import base
from wakeful.substrate.vectors.base import (
    CollectionMismatchError,
    CollectionSpec,
    Distance,
    EmbedderMismatchError,
    FusionMode,
    VectorPoint,
    VectorQuery,
    point_id,
    rrf_fuse,
)

SPEC = CollectionSpec(name="c", embedder="e1", dim=4, sparse_encoder="bm25")


def test_point_ids_are_stable_and_distinct_per_tenant() -> None:
    # Pinned: a point id must be the same in every process, on every machine, forever.
    assert point_id("t1", "chunk-1") == "fa47709b-f5ed-517b-b06e-2dd6ff0c3b1c"
    assert point_id("t1", "chunk-1") != point_id("t2", "chunk-1")


@pytest.mark.parametrize("missing", ["tenant", "agent"])
def test_a_query_cannot_be_built_without_tenant_and_agent(missing: str) -> None:
    fields = {"tenant": "t1", "agent": "a1", "mode": "sparse", "text": "hello"}
    del fields[missing]
    with pytest.raises(ValidationError, match=missing):
        VectorQuery.model_validate(fields)
    with pytest.raises(ValidationError, match=missing):
        VectorQuery.model_validate({**fields, missing: ""})


def test_a_query_needs_the_inputs_of_its_mode() -> None:
    with pytest.raises(ValidationError, match="dense vector and its embedder"):
        VectorQuery(tenant="t", agent="a", mode=FusionMode.HYBRID, text="x")
    with pytest.raises(ValidationError, match="sparse vector or text"):
        VectorQuery(tenant="t", agent="a", mode=FusionMode.SPARSE)
    with pytest.raises(ValidationError, match="dense vector and its embedder"):
        VectorQuery(tenant="t", agent="a", mode=FusionMode.DENSE, dense=(1.0,))


def test_points_need_aware_dates() -> None:
    with pytest.raises(ValidationError, match="timezone-aware"):
        VectorPoint(
            tenant="t",
            agent="a",
            chunk_id="c",
            text="x",
            vector=(1.0,),
            embedder="e1",
            session_date=datetime(2026, 1, 1),  # noqa: DTZ001 - the point of the test
        )


def test_payload_carries_what_retrieval_reads() -> None:
    p = VectorPoint(tenant="t", agent="a", chunk_id="c", text="x", vector=(1.0,), embedder="e")
    assert set(p.payload()) == {
        "tenant", "agent", "chunk_id", "text", "seq", "session_id", "session_date",
        "external_id", "kind", "source_hash",
    }  # fmt: skip
    assert p.payload()["source_hash"]


def test_spec_compatibility() -> None:
    SPEC.check_compatible(SPEC)
    with pytest.raises(EmbedderMismatchError, match="e2"):
        SPEC.check_compatible(SPEC.model_copy(update={"embedder": "e2"}))
    with pytest.raises(EmbedderMismatchError):
        SPEC.check_compatible(SPEC.model_copy(update={"dim": 8}))
    other = SPEC.model_copy(update={"distance": Distance.DOT})
    with pytest.raises(CollectionMismatchError) as info:
        SPEC.check_compatible(other)
    assert not isinstance(info.value, EmbedderMismatchError)


def test_rrf_adds_weighted_reciprocal_ranks() -> None:
    fused = dict(rrf_fuse([["a", "b"], ["b", "c"]], [1.0, 2.0], k=60))
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["b"] == pytest.approx(1 / 62 + 2 / 61)
    assert fused["c"] == pytest.approx(2 / 62)


def test_rrf_breaks_ties_by_first_appearance() -> None:
    assert [k for k, _ in rrf_fuse([["x", "y"], ["y", "x"]], [1.0, 1.0])] == ["x", "y"]


@pytest.mark.parametrize(
    "module",
    [
        "wakeful.substrate.vectors",
        "wakeful.substrate.vectors.base",
        "wakeful.substrate.vectors.memory",
        "wakeful.substrate.vectors.edge",
        "wakeful.substrate.vectors.server",
        "wakeful.substrate.embedders",
        "wakeful.substrate.lexical",
        "wakeful.substrate.retrieval",
        "benchmarks.retrieval_eval",
    ],
)
def test_public_names_exist(module: str) -> None:
    mod = importlib.import_module(module)
    assert sorted(mod.__all__) == sorted(set(mod.__all__))
    for name in mod.__all__:
        assert getattr(mod, name) is not None, name


def test_base_exports_the_protocol() -> None:
    assert "VectorStore" in base.__all__
