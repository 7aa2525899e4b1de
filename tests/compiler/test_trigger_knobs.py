"""Per-trigger knobs (``compiler/knobs.py``): a firing trigger's ``budget_tokens``,
``tool_output_max_tokens``, ``freshness``, ``evict_resolved_errors`` and ``action`` are
accepted by the policy, applied to the compile, and named in the ledger's decisions with
their value and what they did; a trigger that does not fire, or sets none, changes nothing.
Also the resolved-error producer itself (``eviction.evict_resolved_errors``) and the
unloading of a loaded skill when the task class changes (``compiler/triggers.py``)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from wakeful.compiler import BlockKind, GoalKind, Role, WindowPolicy, load_policy
from wakeful.compiler.blocks import Block, Goal
from wakeful.compiler.knobs import trigger_actions, with_knobs
from wakeful.compiler.triggers import LOADED_META, LOADED_TASK_META
from wakeful.errors import PolicyError

from .factory import NOW, WAKE, block, turn
from .factory import snapshot as make_snapshot
from .helpers import assert_anthropic_valid, compile_

BIG = "\n".join(f"line {k}: checkout deploy 41 healthy" for k in range(200))


def _goal(**kw: Any) -> Goal:
    return Goal(kind=GoalKind.MESSAGE, text="Why did the deploy fail?", **kw)


def _call(n: int, tool: str, args: dict[str, Any], wake: str, **result: Any) -> list[Block]:
    return [
        block(f"call-{n}", BlockKind.TOOL_CALL, "", seq=10 * n, role=Role.ASSISTANT,
              tool_call_id=f"tc-{n}", tool_name=tool, tool_input=args, wake_id=wake),
        block(f"result-{n}", BlockKind.TOOL_RESULT, result.pop("text", BIG), seq=10 * n + 1,
              role=Role.USER, tool_call_id=f"tc-{n}", tool_name=tool, wake_id=wake, **result),
    ]  # fmt: skip


def _compile(*blocks: Block, policy: str | WindowPolicy = "", goal: Goal | None = None):  # type: ignore[no-untyped-def]
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    tools = [
        block(f"tool:{name}", BlockKind.TOOL_SCHEMA, name, tool_name=name, tool_input=schema)
        for name in ("status", "deploy")
    ]
    g = goal or _goal(task_class="deploys")
    now = turn("now", 10_000, text=g.text, wake_id=WAKE)
    pol = policy if isinstance(policy, WindowPolicy) else load_policy(policy)
    return compile_(make_snapshot([*tools, *blocks, now]), pol, goal=g)


def _trigger(knobs: str, when: str = 'task_classes = ["deploys"]') -> str:
    return f'[[triggers]]\nname = "deploys"\n{when}\n{knobs}\n'


def _row(w, block_id: str) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    row = w.ledger.row(block_id)
    assert row is not None, block_id
    return row.status, row.rule


HISTORY = [
    turn("ask-1", 1, wake_id="w-1"),
    *_call(1, "status", {"q": "checkout"}, "w-1"),
    turn("ask-2", 15, wake_id="w-2"),
]


def test_every_knob_is_accepted_and_a_trigger_without_knobs_dumps_as_before() -> None:
    policy = load_policy(
        _trigger(
            "budget_tokens = 50000\ntool_output_max_tokens = 500\n"
            'freshness = { memory = 24.0 }\nevict_resolved_errors = true\naction = "compact"'
        )
    )
    t = policy.triggers[0]
    assert (t.budget_tokens, t.tool_output_max_tokens, t.action) == (50_000, 500, "compact")
    assert t.freshness == {BlockKind.MEMORY: 24.0} and t.evict_resolved_errors is True
    plain = load_policy(_trigger(""))
    assert set(plain.model_dump()["triggers"][0]) == {
        "name", "precedence", "paths", "intents", "task_classes", "inject", "suppress", "rules",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("knob", "message"),
    [
        ("budget_tokens = 0", "triggers[0].budget_tokens: Input should be greater than 0"),
        ("tool_output_max_tokens = -5", "triggers[0].tool_output_max_tokens: Input should be"),
        ('action = "nap"', "triggers[0].action: Input should be 'handoff' or 'compact'"),
        ("freshness = { memory = 0.0 }", "freshness.memory must be a positive number of hours"),
        ("freshness = { nonsense = 1.0 }", "triggers[0].freshness.nonsense.[key]: Input should"),
        ("budget = 5", "triggers[0].budget: Extra inputs are not permitted"),
    ],
)
def test_a_bad_knob_is_one_line_naming_it(knob: str, message: str) -> None:
    with pytest.raises(PolicyError) as err:
        load_policy(_trigger(knob))
    assert message in str(err.value) and "\n" not in str(err.value)


def test_no_firing_trigger_leaves_the_policy_object_and_the_ledger_as_they_were() -> None:
    policy = load_policy(_trigger("budget_tokens = 5000"))
    assert with_knobs(policy, _goal(task_class="billing")) == (policy, [])
    quiet = _compile(*HISTORY, policy=policy, goal=_goal(task_class="billing"))
    none = _compile(*HISTORY, policy=load_policy(_trigger("")), goal=_goal(task_class="billing"))
    assert quiet.request_json == none.request_json
    assert quiet.ledger.decisions == none.ledger.decisions
    assert not any(k.startswith("trigger.") for k in quiet.ledger.decisions)


def test_budget_tokens_narrows_the_window_and_says_so() -> None:
    w = _compile(*HISTORY, policy=_trigger("budget_tokens = 20000"))
    assert w.ledger.input_budget == 20_000
    assert w.ledger.decisions["trigger.deploys.budget_tokens"] == (
        "20000: input budget 191808 -> 20000 tokens"
    )
    # The ledger names the policy as declared, not the one the knob made.
    assert w.ledger.policy_fingerprint == load_policy(_trigger("budget_tokens = 20000")).fingerprint
    wide = _compile(*HISTORY, policy=_trigger("budget_tokens = 900000"))
    assert wide.ledger.input_budget == 191_808
    assert "not above it" in wide.ledger.decisions["trigger.deploys.budget_tokens"]


def test_tool_output_max_tokens_collapses_big_earlier_results() -> None:
    small = _call(2, "status", {"q": "cart"}, "w-1", text="green")
    w = _compile(*HISTORY[:2], *small, HISTORY[2], policy=_trigger("tool_output_max_tokens = 100"))
    assert _row(w, "result-1") == ("collapsed", "eviction.tool_output_max_tokens")
    assert _row(w, "result-2")[0] == "included"
    assert _row(w, "call-1")[0] == "included"  # the model's call is sent as it made it
    decision = w.ledger.decisions["trigger.deploys.tool_output_max_tokens"]
    assert decision.startswith("100: collapsed 1 earlier tool result(s) over it to a note, ")
    assert int(decision.split(", ")[1].split()[0]) > 1000  # tokens freed
    assert_anthropic_valid(w.request)
    assert _row(_compile(*HISTORY), "result-1")[0] == "included"  # without the knob


def test_freshness_leaves_out_old_blocks_of_its_kinds() -> None:
    old = block("memory:1", BlockKind.MEMORY, "The deploy key rotates monthly.",
                captured_at=NOW - timedelta(hours=30))  # fmt: skip
    new = block("memory:2", BlockKind.MEMORY, "Deploys run at noon.",
                captured_at=NOW - timedelta(hours=2))  # fmt: skip
    w = _compile(*HISTORY, old, new, policy=_trigger("freshness = { memory = 24.0 }"))
    assert w.ledger.row("memory:1").reason == "stale"  # type: ignore[union-attr]
    assert w.ledger.row("memory:2").position >= 0  # type: ignore[union-attr]
    assert w.ledger.decisions["trigger.deploys.freshness"] == (
        "memory=24h: 1 block(s) of those kinds left out as older than their max age"
    )
    assert _compile(*HISTORY, old, new).ledger.row("memory:1").position >= 0  # type: ignore[union-attr]


ERROR = "deploy failed: connection refused"


def _failed_then_fixed(second_ok: bool = True, same_args: bool = True) -> list[Block]:
    return [
        turn("ask-1", 1, wake_id="w-1"),
        *_call(1, "deploy", {"q": "v41"}, "w-1", text=ERROR, is_error=True),
        *_call(2, "deploy", {"q": "v41" if same_args else "v42"}, "w-1",
               text="deployed v41" if second_ok else ERROR, is_error=not second_ok),
        turn("ask-2", 30, wake_id="w-2"),
    ]  # fmt: skip


def test_a_failure_made_good_by_an_equal_later_call_is_resolved() -> None:
    w = _compile(*_failed_then_fixed(), policy="[eviction]\nevict_resolved_errors = true\n")
    assert _row(w, "result-1") == ("collapsed", "eviction.evict_resolved_errors")
    notes = [
        b["content"] for m in w.request["messages"] if isinstance(m["content"], list)
        for b in m["content"] if b["type"] == "tool_result" and b["tool_use_id"] == "tc-1"
    ]  # fmt: skip
    assert notes == ["[deploy failed here; a later call with the same arguments succeeded]"]
    assert _row(w, "result-2")[0] == "included"
    assert_anthropic_valid(w.request)
    on = "[eviction]\nevict_resolved_errors = true\n"
    # Not made good: the later call failed too, or asked something else.
    assert _row(_compile(*_failed_then_fixed(second_ok=False), policy=on), "result-1")[0] == (
        "included"
    )
    assert _row(_compile(*_failed_then_fixed(same_args=False), policy=on), "result-1")[0] == (
        "included"
    )
    # Off by default.
    assert _row(_compile(*_failed_then_fixed()), "result-1")[0] == "included"


def test_evict_resolved_errors_as_a_trigger_knob_is_named_in_the_ledger() -> None:
    w = _compile(*_failed_then_fixed(), policy=_trigger("evict_resolved_errors = true"))
    assert _row(w, "result-1") == ("collapsed", "eviction.evict_resolved_errors")
    decision = w.ledger.decisions["trigger.deploys.evict_resolved_errors"]
    assert decision.startswith("true: collapsed 1 resolved tool error(s) to a note")


def test_an_action_is_named_and_given_to_the_wake() -> None:
    for action, what in (
        ("compact", "the agent's history is consolidated after this wake"),
        ("handoff", "the session ends with a handoff note after this wake"),
    ):
        text = _trigger(f'action = "{action}"')
        w = _compile(*HISTORY, policy=text)
        assert w.ledger.decisions["trigger.deploys.action"] == f"{action}: {what}"
        assert trigger_actions(load_policy(text), _goal(task_class="deploys")) == (
            action,
            "deploys",
        )
        assert trigger_actions(load_policy(text), _goal(task_class="other")) is None


def test_the_first_firing_trigger_in_precedence_order_decides_a_knob() -> None:
    text = (
        _trigger("precedence = 1\nbudget_tokens = 30000")
        + '[[triggers]]\nname = "urgent"\nprecedence = 5\nintents = ["urgent"]\n'
        "budget_tokens = 10000\n"
    )
    w = _compile(*HISTORY, policy=text, goal=_goal(task_class="deploys", intents=("urgent",)))
    assert w.ledger.input_budget == 10_000
    assert "trigger.urgent.budget_tokens" in w.ledger.decisions
    assert "trigger.deploys.budget_tokens" not in w.ledger.decisions


def _skill(loaded_for: str | None) -> list[Block]:
    meta = {LOADED_META: "5"} | ({LOADED_TASK_META: loaded_for} if loaded_for else {})
    return [
        block("skills:index", BlockKind.SKILL_INDEX, "- deploys: how to deploy"),
        block("skill:deploys", BlockKind.SKILL_BODY, "Always deploy with --canary.", meta=meta),
    ]


def test_a_loaded_skill_is_unloaded_when_the_task_class_changes() -> None:
    same = _compile(*HISTORY, *_skill("deploys"), goal=_goal(task_class="deploys"))
    assert same.ledger.row("skill:deploys").position >= 0  # type: ignore[union-attr]
    other = _compile(*HISTORY, *_skill("deploys"), goal=_goal(task_class="billing"))
    row = other.ledger.row("skill:deploys")
    assert row is not None and (row.status, row.reason, row.rule) == (
        "excluded", "unloaded", "skills.task_class",
    )  # fmt: skip
    assert row.detail == "loaded for task 'deploys'; this goal's task is 'billing'"
    # Intents stand for the task class when there is none.
    by_intent = _compile(*HISTORY, *_skill("deploys"), goal=_goal(intents=("billing",)))
    assert by_intent.ledger.row("skill:deploys").reason == "unloaded"  # type: ignore[union-attr]
    # A goal of no task class, or a skill loaded with none recorded, changes nothing.
    plain = _compile(*HISTORY, *_skill("deploys"), goal=_goal())
    assert plain.ledger.row("skill:deploys").position >= 0  # type: ignore[union-attr]
    unknown = _compile(*HISTORY, *_skill(None), goal=_goal(task_class="billing"))
    assert unknown.ledger.row("skill:deploys").position >= 0  # type: ignore[union-attr]


def test_a_trigger_injecting_the_skill_keeps_it_whatever_it_was_loaded_for() -> None:
    policy = (
        '[[triggers]]\nname = "bills"\ntask_classes = ["billing"]\ninject = ["skill:deploys"]\n'
    )
    w = _compile(*HISTORY, *_skill("deploys"), policy=policy, goal=_goal(task_class="billing"))
    assert w.ledger.row("skill:deploys").position >= 0  # type: ignore[union-attr]
