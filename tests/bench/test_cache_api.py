"""The benchmark's modules and the telemetry module export what they list (ruff keeps
``__all__`` sorted)."""

from __future__ import annotations

import importlib

import pytest

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
    mod = importlib.import_module(module)
    exported = list(mod.__all__)
    assert len(set(exported)) == len(exported)
    for name in exported:
        assert hasattr(mod, name), f"{module}.__all__ lists missing {name}"
