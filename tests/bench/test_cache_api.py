"""The benchmark's modules and the telemetry module export what they list (ruff keeps
``__all__`` sorted)."""

from __future__ import annotations

import pytest

from tests.ops.module_exports import listed_exports

MODULES = [
    "benchmarks.cache_bench",
    "benchmarks.cache_chat_text",
    "benchmarks.cache_limit",
    "benchmarks.cache_locomo",
    "benchmarks.cache_reads",
    "benchmarks.cache_report",
    "benchmarks.cache_session",
    "benchmarks.cache_shapes",
    "benchmarks.cache_strategies",
    "benchmarks.cache_substrate",
    "benchmarks.cache_text",
    "benchmarks.cache_timeline",
    "benchmarks.cache_transcript",
    "benchmarks.cache_variants",
    "benchmarks.cache_wakeful",
    "wakeful.telemetry",
]


@pytest.mark.parametrize("module", MODULES)
def test_all_is_unique_and_complete(module: str) -> None:
    _, exported = listed_exports(module)
    assert len(set(exported)) == len(exported)
