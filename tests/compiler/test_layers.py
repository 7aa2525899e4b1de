"""Layer budgets (``compiler/layers.py``): a declared share caps a layer, a higher priority
is admitted first when the window is tight, and the ledger says per layer what it asked for
and what it got; a snapshot without declared layers compiles as it always did."""

from __future__ import annotations

import pytest

from wakeful.compiler import BlockKind, load_policy
from wakeful.compiler.layer_budget import LayerBudget, layer_meta
from wakeful.errors import ConfigError

from .factory import base_blocks, block, snapshot, turn
from .helpers import compile_

TIGHT = "[budget]\ncontext_limit = 10000\noutput_reserve = 500\n"  # input budget 9500


def frame(id: str, layer: str, priority: int | None, importance: float, seq: int):  # type: ignore[no-untyped-def]
    return block(
        id,
        BlockKind.TASK_FRAME,
        f"{id} " + "x" * 1200,
        seq=seq,
        importance=importance,
        meta=layer_meta(layer, priority, None),
    )


def test_a_higher_priority_layer_is_admitted_first_and_the_lower_gives_way() -> None:
    # The semi-stable allocation (950 tokens, the base blocks' frame, skills and handoff
    # note among them) holds two of these frames. The environment's rank higher, so the
    # budget alone would take two of them and leave the code map out.
    env = [frame(f"env-{i}", "environment", 0, 1.0, 10 + i) for i in range(3)]
    code = [frame(f"code-{i}", "code_map", 5, 0.1, 20 + i) for i in range(2)]
    w = compile_(snapshot([*base_blocks(), *env, *code]), load_policy(TIGHT))
    ledger = w.ledger
    for b in code:
        row = ledger.row(b.id)
        assert row is not None and row.position >= 0 and row.reason == "layer_priority"
    gave = [r for r in ledger.excluded() if r.reason == "layer_priority"]
    assert sorted(r.block_id for r in gave) == ["env-1", "env-2"]
    assert all(r.rule == "layers.environment.priority" for r in gave)
    assert "gave way to code-" in gave[0].detail and "(priority 5 > 0)" in gave[0].detail
    assert ledger.row("env-0").reason == "budget"  # type: ignore[union-attr]
    assert ledger.decisions["layers.code_map"].startswith("priority 5, budget_share none; asked ")
    assert "got" in ledger.decisions["layers.code_map"]
    assert ledger.decisions["layers.environment"].endswith(
        "in 3 block(s); got 0 in 0; 2 gave way to higher priorities"
    )
    assert w.input_tokens <= load_policy(TIGHT).budget.input_budget


def test_without_priorities_the_budget_alone_decides() -> None:
    env = [frame(f"env-{i}", "environment", None, 1.0, 10 + i) for i in range(3)]
    code = [frame(f"code-{i}", "code_map", None, 0.1, 20 + i) for i in range(2)]
    assert all(not b.meta for b in env + code)  # nothing declared: nothing stamped
    w = compile_(snapshot([*base_blocks(), *env, *code]), load_policy(TIGHT))
    assert all(w.ledger.row(b.id).position < 0 for b in code)  # type: ignore[union-attr]
    assert not any(k.startswith("layers.") for k in w.ledger.decisions)


def test_a_share_caps_its_layer_and_the_ledger_names_what_was_left_out() -> None:
    docs = [
        block(
            f"doc-{i}",
            BlockKind.MEMORY,
            f"doc {i} " + "d" * 800,
            seq=30 + i,
            importance=0.9 - i / 10,
            meta=layer_meta("documents", None, 0.05),
        )
        for i in range(3)
    ]
    w = compile_(snapshot([*base_blocks(), *docs]), load_policy(TIGHT))
    ledger = w.ledger
    kept = [b.id for b in docs if ledger.row(b.id).position >= 0]  # type: ignore[union-attr]
    assert kept == ["doc-0", "doc-1"]  # cap floor(0.05 * 9500) = 475: two of ~205
    over = ledger.row("doc-2")
    assert over is not None and over.reason == "over_layer_share"
    assert over.rule == "layers.documents.budget_share"
    assert "of its 475 tokens (0.05 of 9500)" in over.detail
    account = ledger.decisions["layers.documents"]
    assert account.startswith("priority 0, budget_share 0.05; asked ")
    assert "in 3 block(s); got " in account and " in 2; 1 over its share" in account


def test_a_layer_with_room_to_spare_sends_the_bytes_it_would_undeclared() -> None:
    # Meta is never rendered: a declared layer that fits changes only the ledger's account.
    plain = base_blocks()
    stamped = [
        b.model_copy(update={"meta": layer_meta("environment", 3, 0.5)})
        if b.kind is BlockKind.TASK_FRAME
        else b
        for b in plain
    ]
    before, after = compile_(snapshot(plain)), compile_(snapshot(stamped))
    assert after.request_json == before.request_json
    assert after.ledger.decisions["layers.environment"] == (
        "priority 3, budget_share 0.5; asked 25 tokens in 1 block(s); got 25 in 1"
    )
    assert not any(k.startswith("layers.") for k in before.ledger.decisions)


@pytest.mark.parametrize(
    ("priority", "share", "message"),
    [
        (1.5, None, "priority must be an integer (got 1.5)"),
        (None, 0.0, "budget_share must be a fraction of the window in (0, 1]"),
        (None, 2, "budget_share must be a fraction of the window in (0, 1]"),
    ],
)
def test_a_bad_declaration_is_one_line_naming_it(
    priority: object, share: object, message: str
) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        LayerBudget(priority=priority, budget_share=share)  # type: ignore[arg-type]


def test_the_history_is_never_moved_for_a_priority() -> None:
    # Turns of declared layers sit in the history's segment, which is cut at an anchor and
    # taken whole from there: a priority leaves it as the budget made it, even when the
    # older turns' layer outranks the newer ones'.
    turns = [
        turn(
            f"lt-{i}",
            100 + i,
            text=f"{i} " + "w" * 1200,
            meta=layer_meta("older" if i < 20 else "newer", 9 if i < 20 else 0, None),
        )
        for i in range(40)
    ]
    w = compile_(snapshot([*base_blocks(), *turns]), load_policy(TIGHT))
    rows = [w.ledger.row(t.id) for t in turns]
    assert rows[0].position < 0 and rows[-1].position >= 0  # type: ignore[union-attr]
    assert not any(r.reason == "layer_priority" for r in rows)  # type: ignore[union-attr]
    assert "gave way" not in w.ledger.decisions["layers.newer"]
