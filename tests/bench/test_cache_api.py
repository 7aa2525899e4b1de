"""The benchmark's modules and the telemetry module export what they list (ruff keeps
``__all__`` sorted)."""

from __future__ import annotations

import importlib

import pytest

MODULES = [
    "wakeful.bench.cache_bench",
    "wakeful.bench.cache_chat_text",
    "wakeful.bench.cache_limit",
    "wakeful.bench.cache_locomo",
    "wakeful.bench.cache_reads",
    "wakeful.bench.cache_report",
    "wakeful.bench.cache_session",
    "wakeful.bench.cache_shapes",
    "wakeful.bench.cache_strategies",
    "wakeful.bench.cache_substrate",
    "wakeful.bench.cache_text",
    "wakeful.bench.cache_timeline",
    "wakeful.bench.cache_transcript",
    "wakeful.bench.cache_variants",
    "wakeful.bench.cache_wakeful",
    "wakeful.telemetry",
]


@pytest.mark.parametrize("module", MODULES)
def test_all_is_unique_and_complete(module: str) -> None:
    mod = importlib.import_module(module)
    exported = list(mod.__all__)
    assert len(set(exported)) == len(exported)
    for name in exported:
        assert hasattr(mod, name), f"{module}.__all__ lists missing {name}"
