"""Shared helpers: compile with defaults, check Anthropic protocol invariants."""

from __future__ import annotations

import itertools
from typing import Any

from wakeful.compiler import (
    CompiledWindow,
    EstimatingCounter,
    Snapshot,
    WindowPolicy,
    compile_window,
)

from .factory import NOW, goal


def compile_(snap: Snapshot, policy: WindowPolicy | None = None, **kw: Any) -> CompiledWindow:
    """``compile_window`` of ``snap`` with the factory's goal, the default policy, ``NOW`` and
    an estimating counter, unless ``kw`` gives others (and any other option)."""
    g = kw.pop("goal", None) or goal()
    kw.setdefault("counter", EstimatingCounter())
    return compile_window(snap, g, policy or WindowPolicy.default(), kw.pop("now", NOW), **kw)


def assert_anthropic_valid(request: dict[str, Any]) -> None:
    """Alternating roles, user first and last, every tool_use answered right after."""
    messages = request["messages"]
    assert messages and messages[0]["role"] == "user" and messages[-1]["role"] == "user"
    for a, b in itertools.pairwise(messages):
        assert a["role"] != b["role"]
    for n, message in enumerate(messages):
        content = message["content"]
        assert content, "empty message"
        uses = [c["id"] for c in content if c["type"] == "tool_use"]
        if uses:
            following = messages[n + 1]["content"]
            answered = [c["tool_use_id"] for c in following if c["type"] == "tool_result"]
            assert answered[: len(uses)] == uses
            kinds = [c["type"] for c in following]
            assert kinds[: len(uses)] == ["tool_result"] * len(uses)  # results first
        results = [c["tool_use_id"] for c in content if c["type"] == "tool_result"]
        if results:
            previous = messages[n - 1]["content"]
            assert results == [c["id"] for c in previous if c["type"] == "tool_use"]
    marks = [c for c in _content(request) if "cache_control" in c]
    assert len(marks) <= 4
    ttls = [m["cache_control"]["ttl"] for m in marks]
    assert ttls == sorted(ttls, key=lambda t: t != "1h")  # 1h entries before 5m ones


def _content(request: dict[str, Any]) -> list[dict[str, Any]]:
    out = list(request.get("tools", [])) + list(request["system"])
    for message in request["messages"]:
        out.extend(message["content"])
    return out


def without_cache_markers(value: Any) -> Any:
    """``value`` (a request or part of one) without its ``cache_control`` markers: where a
    breakpoint sits is not content, so two requests or turns compare without them."""
    if isinstance(value, dict):
        return {k: without_cache_markers(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [without_cache_markers(v) for v in value]
    return value
