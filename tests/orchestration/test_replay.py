"""Temporal's Replayer runs the committed histories (``tests/histories/*.json``, recorded by
``python -m tests.histories.record``) against today's workflow code: a change that would
break running agents fails here with a non-determinism error.

The unsuffixed histories were recorded before the payload codec and the merged steps
(uncompressed payloads; ``start_wake``, ``record_output`` and ``finish_wake`` as steps of
their own); the ``_2`` ones after; the ``_3`` ones after session timers became one alarm
across wakes; the ``_4`` ones with quick tools run as local activities; the ``_5`` ones
after triggers were deduplicated beyond the workflow's memory, with
``agent_lifecycle_workflow_5``: keep-warm calls, a repeated key looked up in the substrate,
a session ended idle, model calls as local activities, and a continue-as-new; the ``_6``
ones (and ``agent_lifecycle_workflow_6``) after wake updates left their answers to the
``result`` query (patch ``answer-by-query-1``) and payloads became ``wz2``. All must
replay: the first through the codec's pass-through, all of them through the workflow's
patch branches.

``agent_local_timeout_workflow`` (``python -m tests.histories.record_local_timeout``): a
local tool that timed out. A replay raises that timeout in another shape than the run did
(see ``wakeful.workflows.cycle.ACTIVITY_FAILURES``); while the workflow caught only the
run's shape, this history failed with ``[TMPRL1100] ... Missing associated machine for
LocalActivity(5)``, as every worker after a restart did.

``agent_intent_spend_workflow`` (``python -m tests.histories.record_intent_spend``): a wake
whose goal a model classified, its cost counted in the wake's spend (patch
``intent-spend-1``).

``agent_child_ceiling_workflow`` (``python -m tests.histories.record_child_ceiling``): a
capped agent's fan-out, its children run one at a time under what the wake had left of
its cap (patch ``child-ceiling-1``).

``agent_tool_attempts_workflow`` (``python -m tests.histories.record_tool_attempts``): a
tool and a local tool that each fail once and succeed on their second attempt, counted by the
workflow (patch ``tool-attempts-1``): the store's and the worker's failures are not.

``agent_typed_answer_workflow`` (``python -m tests.histories.record_typed_answer``): an agent
with ``output_type`` whose first reply was text, asked again and answering through
``final_result`` (patch ``typed-answer-1``).

``agent_cache_write_workflow`` (``python -m tests.histories.record_cache_write``): six
wakes of one call, two hours apart, TTLs priced on what wakes add (patch
``cache-ttl-added-1``), the last two first calls writing no session entry (patch
``first-call-write-1``).

``agent_trigger_handoff_workflow`` (``python -m tests.histories.record_trigger_handoff``): a
wake whose goal fired a trigger with ``action = "handoff"``, the session ended after it
(patch ``trigger-handoff-1``).

``agent_idle_priced_workflow`` (``python -m tests.histories.record_idle_priced``): two
wakes two hours apart of an agent that set no idle limit; the idle timer priced continuing
the session cheaper than a handoff and the second wake continued it (patch
``idle-priced-1``)."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from wakeful.worker.codec import ENCODING, ENCODING_Z1, data_converter
from wakeful.worker.worker import WORKFLOWS
from wakeful.workflows.cycle import CHILD_CEILING, INTENT_SPEND, TOOL_ATTEMPTS, TYPED_ANSWER
from wakeful.workflows.state import AgentInput, AgentState

HISTORIES = Path(__file__).resolve().parents[1] / "histories"
KINDS = ("agent_workflow", "child_agent_workflow", "scheduled_wake_workflow")
SUFFIXES = ("_2", "_3", "_4", "_5", "_6")
NAMES = (
    *KINDS,
    *(f"{kind}{suffix}" for suffix in SUFFIXES for kind in KINDS),
    "agent_lifecycle_workflow_5",
    "agent_lifecycle_workflow_6",
    "agent_local_timeout_workflow",
    "agent_intent_spend_workflow",
    "agent_child_ceiling_workflow",
    "agent_tool_attempts_workflow",
    "agent_typed_answer_workflow",
    "agent_trigger_handoff_workflow",
    "agent_cache_write_workflow",
    "agent_idle_priced_workflow",
)


def _history(name: str) -> WorkflowHistory:
    return WorkflowHistory.from_json(name, (HISTORIES / f"{name}.json").read_text())


def _event_types(name: str) -> set[str]:
    return {e["eventType"] for e in json.loads((HISTORIES / f"{name}.json").read_text())["events"]}


@pytest.mark.parametrize("suffix", ["", *SUFFIXES])
def test_the_histories_cover_what_matters(suffix: str) -> None:
    agent = _event_types(f"agent_workflow{suffix}")
    assert {
        "EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED",  # delegate fan-out
        "EVENT_TYPE_MARKER_RECORDED",  # local substrate activities
        "EVENT_TYPE_ACTIVITY_TASK_COMPLETED",  # model calls and tools
        "EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED",  # wake updates
        "EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED",  # the scheduled trigger and the stop
        "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED",
    } <= agent
    assert "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED" in _event_types(
        f"child_agent_workflow{suffix}"
    )
    assert "EVENT_TYPE_ACTIVITY_TASK_COMPLETED" in _event_types(f"scheduled_wake_workflow{suffix}")


def test_the_new_histories_hold_compressed_payloads_and_fewer_steps() -> None:
    text = (HISTORIES / "agent_workflow_2.json").read_text()
    assert ENCODING_Z1.decode() in base64_encodings(text)
    merged = {"wakeful.start_wake", "wakeful.record_output"}
    assert merged <= _activity_types("agent_workflow")
    assert not merged & _activity_types("agent_workflow_2")


def test_the_newest_histories_keep_one_session_timer_across_wakes() -> None:
    """Before, each wait for a trigger started a timer and the trigger cancelled it; the
    alarm is started once and outlives the wakes (see workflows/alarm.py)."""
    for name, canceled in (("agent_workflow_2", True), ("agent_workflow_3", False)):
        types = json.loads((HISTORIES / f"{name}.json").read_text())["events"]
        kinds = [e["eventType"] for e in types]
        assert ("EVENT_TYPE_TIMER_CANCELED" in kinds) is canceled
        assert kinds.count("EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED") >= 2


def test_quick_tools_run_as_local_activities_in_the_newest_histories() -> None:
    """A local tool adds a marker to the workflow task that asked for it, instead of an
    activity task's three events and a workflow task of its own."""
    assert "wakeful.run_tool" in _local_activity_types("agent_workflow_4")
    assert "wakeful.run_tool" not in _scheduled_activity_types("agent_workflow_4")
    assert "wakeful.run_tool" in _scheduled_activity_types("agent_workflow_3")


@pytest.mark.parametrize("name", ["agent_workflow_6", "agent_lifecycle_workflow_6"])
def test_the_newest_histories_answer_wakes_by_query_in_wz2_payloads(name: str) -> None:
    """Their replays take the patch branch that leaves the answer out of the update."""
    assert "answer-by-query-1" in _patches(name)
    assert ENCODING.decode() in base64_encodings((HISTORIES / f"{name}.json").read_text())


def _patches(name: str) -> set[str]:
    return {
        json.loads(m.details["patch-data"].payloads[0].data)["id"]
        for e in _history(name).events
        if e.HasField("marker_recorded_event_attributes")
        for m in [e.marker_recorded_event_attributes]
        if m.marker_name == "core_patch"
    }


def test_the_intent_spend_history_takes_its_patch_branch() -> None:
    """A model classified the goal: the wake's spend counted that call."""
    assert INTENT_SPEND in _patches("agent_intent_spend_workflow")


def test_the_child_ceiling_history_runs_its_children_one_at_a_time() -> None:
    """A capped agent's three delegations: each child started once the one before ended."""
    name = "agent_child_ceiling_workflow"
    assert CHILD_CEILING in _patches(name)
    events = json.loads((HISTORIES / f"{name}.json").read_text())["events"]
    kinds = [e["eventType"].removeprefix("EVENT_TYPE_") for e in events]
    children = [k for k in kinds if "CHILD_WORKFLOW_EXECUTION" in k]
    one = ["START_CHILD_WORKFLOW_EXECUTION_INITIATED", "CHILD_WORKFLOW_EXECUTION_STARTED"]
    assert children == [*one, "CHILD_WORKFLOW_EXECUTION_COMPLETED"] * 3


def test_the_tool_attempts_history_counts_the_tools_own_failures_in_the_workflow() -> None:
    """Each tool's first attempt failed non-retryable, and the workflow waited on a timer
    before the second: once as an activity, once as a local activity."""
    name = "agent_tool_attempts_workflow"
    assert TOOL_ATTEMPTS in _patches(name)
    events = _history(name).events
    failed = [
        e.activity_task_failed_event_attributes.failure
        for e in events
        if e.HasField("activity_task_failed_event_attributes")
    ]
    assert [(f.message, f.application_failure_info.non_retryable) for f in failed] == [
        ("upstream 503", True)
    ]
    local_failures = [
        e.marker_recorded_event_attributes.failure.message
        for e in events
        if e.HasField("marker_recorded_event_attributes")
        and e.marker_recorded_event_attributes.HasField("failure")
    ]
    assert local_failures == ["upstream 503"]
    kinds = [e["eventType"] for e in json.loads((HISTORIES / f"{name}.json").read_text())["events"]]
    assert kinds.count("EVENT_TYPE_TIMER_FIRED") == 2


def test_the_typed_answer_history_takes_its_patch_branch() -> None:
    """A text reply did not end the wake: it compiled and called the model again."""
    name = "agent_typed_answer_workflow"
    assert TYPED_ANSWER in _patches(name)
    markers = [
        json.loads(e.marker_recorded_event_attributes.details["data"].payloads[0].data)
        for e in _history(name).events
        if e.HasField("marker_recorded_event_attributes")
        and "data" in e.marker_recorded_event_attributes.details
    ]
    compiles = [m for m in markers if m.get("activity_type") == "wakeful.compile"]
    assert len(compiles) >= 2, markers


def test_the_lifecycle_history_covers_the_idle_hours() -> None:
    """What happens between wakes, which the other histories never reach."""
    name = "agent_lifecycle_workflow_5"
    kinds = _event_types(name)
    assert "EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW" in kinds
    assert "EVENT_TYPE_TIMER_FIRED" in kinds  # the session alarm
    assert "wakeful.keep_warm" in _scheduled_activity_types(name)
    local = _local_activity_types(name)
    assert {"wakeful.find_wake", "wakeful.end_session", "wakeful.call_model"} <= local
    assert "wakeful.call_model" not in _scheduled_activity_types(name)


def test_the_local_timeout_history_holds_a_timed_out_local_tool_and_a_wake_after() -> None:
    markers = [
        e.marker_recorded_event_attributes
        for e in _history("agent_local_timeout_workflow").events
        if e.HasField("marker_recorded_event_attributes")
    ]
    timed_out = [
        json.loads(m.details["data"].payloads[0].data)["activity_type"]
        for m in markers
        if m.HasField("failure") and m.failure.message == "Activity timed out"
    ]
    assert timed_out == ["wakeful.run_tool"]
    kinds = _event_types("agent_local_timeout_workflow")
    assert "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED" in kinds


def _scheduled_activity_types(name: str) -> set[str]:
    return {
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in _history(name).events
        if e.HasField("activity_task_scheduled_event_attributes")
    }


def _local_activity_types(name: str) -> set[str]:
    return _activity_types(name) - _scheduled_activity_types(name)


def base64_encodings(text: str) -> set[str]:
    """Every payload encoding named in a history's JSON (metadata values are base64)."""
    found = re.findall(r'"encoding": "([A-Za-z0-9+/=]+)"', text)
    return {base64.b64decode(v).decode() for v in found}


def _activity_types(name: str) -> set[str]:
    """Activity types of a history, local (marker data) and regular."""
    history = _history(name)
    types = {
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    }
    for e in history.events:
        if e.HasField("marker_recorded_event_attributes"):
            data = e.marker_recorded_event_attributes.details.get("data")
            if data is not None and data.payloads:
                types.add(json.loads(data.payloads[0].data).get("activity_type", ""))
    return types


@pytest.mark.parametrize("name", NAMES)
async def test_committed_histories_replay_without_nondeterminism(name: str) -> None:
    replayer = Replayer(workflows=WORKFLOWS, data_converter=data_converter)
    result = await replayer.replay_workflow(_history(name))
    assert result.replay_failure is None


@workflow.defn(name="AgentWorkflow", sandboxed=False)
class _ChangedAgentWorkflow:
    """An 'edit' that drops the wake cycle: replay must notice."""

    @workflow.run
    async def run(self, inp: AgentInput) -> AgentState:
        await workflow.wait_condition(lambda: False)
        return inp.state


async def test_the_replayer_catches_a_nondeterministic_change() -> None:
    replayer = Replayer(workflows=[_ChangedAgentWorkflow], data_converter=data_converter)
    with pytest.raises(workflow.NondeterminismError):
        await replayer.replay_workflow(_history("agent_workflow"))


def test_the_trigger_handoff_history_ends_the_session_after_the_wake() -> None:
    """The trigger's handoff action: the session's note was written after the wake, in
    the patch branch, before the stop (which then found no session open)."""
    from wakeful.workflows.agent import TRIGGER_HANDOFF

    name = "agent_trigger_handoff_workflow"
    assert TRIGGER_HANDOFF in _patches(name)
    assert "wakeful.end_session" in _local_activity_types(name)


def test_the_cache_write_history_takes_both_patch_branches() -> None:
    """Wakes nothing read in time: their later first calls wrote no session entry."""
    from wakeful.workflows.agent import FIRST_CALL_WRITE, TTL_ADDED

    assert {TTL_ADDED, FIRST_CALL_WRITE} <= _patches("agent_cache_write_workflow")


async def test_the_idle_priced_history_continues_the_session_past_the_idle_timer() -> None:
    """The timer fired an hour after the first wake and kept the session: both wakes ran
    in the first session, and only the stop wrote a handoff note."""
    from wakeful.workflows.sessions import IDLE_PRICED

    name = "agent_idle_priced_workflow"
    assert IDLE_PRICED in _patches(name)
    assert "EVENT_TYPE_TIMER_FIRED" in _event_types(name)
    (done,) = [
        e.workflow_execution_completed_event_attributes
        for e in _history(name).events
        if e.HasField("workflow_execution_completed_event_attributes")
    ]
    (state,) = await data_converter.decode(done.result.payloads, [AgentState])
    assert (state.wakes, state.session_number) == (2, 1)
    assert state.idle_kept_at is not None and state.idle_kept_at < state.last_wake_at
