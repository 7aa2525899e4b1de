from __future__ import annotations

import wakeful.compiler as compiler

EXPECTED = {
    "COMPILER_VERSION",
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
    "WindowPolicy",
    "Ranking",
    "Renderer",
    "Role",
    "Segment",
    "Snapshot",
    "Stability",
    "Retrieval",
    "Staleness",
    "TokenCounter",
    "TriggerRule",
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


def test_a_ledger_says_which_compiler_version_made_it() -> None:
    from .factory import NOW, goal, snapshot

    window = compiler.compile_window(
        snapshot(),
        goal(),
        compiler.WindowPolicy.default(),
        NOW,
        counter=compiler.EstimatingCounter(),
    )
    assert window.ledger.compiler_version == compiler.COMPILER_VERSION
    stored = window.ledger.model_dump(mode="json")
    del stored["compiler_version"]  # as ledgers were stored before the version was kept
    assert compiler.Ledger.model_validate(stored).compiler_version == 1
