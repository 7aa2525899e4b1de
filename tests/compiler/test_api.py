from __future__ import annotations

import wakeful.compiler as compiler

EXPECTED = {
    "KIND_SEGMENT",
    "AgentProfile",
    "Allocations",
    "AnthropicRenderer",
    "Block",
    "BlockKind",
    "Breakpoint",
    "Budget",
    "Cache",
    "CompiledWindow",
    "CountingCache",
    "DiffReason",
    "EstimatingCounter",
    "Eviction",
    "Goal",
    "GoalKind",
    "Ledger",
    "LedgerDiff",
    "LedgerRow",
    "OpenAIChatRenderer",
    "OpenAIResponsesRenderer",
    "Policy",
    "Ranking",
    "Renderer",
    "Role",
    "Segment",
    "Snapshot",
    "Stability",
    "Staleness",
    "TokenCounter",
    "Trigger",
    "compile_window",
    "content_hash",
    "diff_ledgers",
    "load_policy",
    "load_policy_file",
}


def test_all_is_explicit_and_complete() -> None:
    assert set(compiler.__all__) == EXPECTED
    assert len(compiler.__all__) == len(EXPECTED)
    for name in compiler.__all__:
        assert getattr(compiler, name) is not None


def test_public_names_are_not_leaked() -> None:
    public = {n for n in vars(compiler) if not n.startswith("_")}
    submodules = {n for n in public if type(getattr(compiler, n)).__name__ == "module"}
    assert public - submodules == EXPECTED
