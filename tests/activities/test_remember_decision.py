"""The built-in ``remember_decision`` tool in the tool activity, against a real Postgres: a
retry after an attempt that wrote the decision but not its result writes no second decision
(and supersedes nothing twice); wrong arguments are an error result the model reads."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from sqlalchemy import event
from temporalio.testing import ActivityEnvironment

from tests.activities.test_model_activity import T0, _wake
from tests.substrate.events import tool_event
from wakeful.activities.deps import ActivityDeps
from wakeful.activities.tools import ToolActivities
from wakeful.activities.wake import step_key
from wakeful.agents import Agent, AgentRegistry
from wakeful.compiler import EstimatingCounter
from wakeful.contracts import RunToolIn, ToolCallRef
from wakeful.decisions import REMEMBER_DECISION, remember_decision_tool
from wakeful.providers.base import ModelReply, ToolCall, Usage
from wakeful.substrate.registry_repo import registry_line
from wakeful.substrate.store import Store, TenantStore


def _activities(store: Store, tenant: TenantStore) -> ToolActivities:
    agent = Agent(name="a1", instructions="x", tenant=tenant.name, decisions=True)
    # Registered, as a worker registers its agents: the registry refuses unknown ones.
    tenant.upsert_agent("a1", model="m", provider="anthropic", instructions="x", spec={})
    deps = ActivityDeps(
        store=store,
        agents=AgentRegistry([agent]),
        providers=lambda name: None,  # type: ignore[arg-type,return-value]
        counter=EstimatingCounter(),
    )
    return ToolActivities(deps)


def _call(tenant: TenantStore, args: dict[str, Any]) -> RunToolIn:
    """A recorded model reply calling remember_decision, and its tool_call event."""
    wake = _wake(tenant)
    call_id = f"call-{uuid.uuid4().hex[:6]}"
    reply = ModelReply(
        tool_calls=[ToolCall(id=call_id, name=REMEMBER_DECISION, input=args)],
        stop_reason="tool_use",
        usage=Usage(input_tokens=10, output_tokens=3),
        model="m",
        provider="anthropic",
    )
    tenant.append_events(
        "a1",
        [
            tool_event(
                "tool_call",
                step_key(wake, 0, "call", call_id),
                "{}",
                call_id=call_id,
                tool=REMEMBER_DECISION,
                at=T0,
                session_id=wake.session_id,
                wake_id=wake.wake_id,
            )
        ],
    )
    return RunToolIn(
        wake=wake,
        call_index=0,
        output_hash=tenant.put_blob("model_output", reply.model_dump_json()),
        tool_call=ToolCallRef(id=call_id, name=REMEMBER_DECISION),
        at=T0,
    )


@contextmanager
def worker_dies_before_the_result(store: Store) -> Iterator[None]:
    """The first attempt stops where a crashed worker would: the decision written, the
    tool result not yet."""
    died: list[str] = []

    def hook(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if "INSERT INTO EVENTS" in statement.upper() and not died:  # (with its blob)
            died.append(statement)
            raise RuntimeError("the worker died")

    event.listen(store.engine, "before_cursor_execute", hook)
    try:
        yield
    finally:
        event.remove(store.engine, "before_cursor_execute", hook)


def test_a_retried_call_registers_one_decision(store: Store, tenant: TenantStore) -> None:
    # The promotion rules' (a person's would stand: see the test after this one).
    acts = _activities(store, tenant)
    tenant.record_decision("a1", key="db.engine", text="Use PG 15.", source="consolidation")
    inp = _call(tenant, {"key": "db.engine", "text": "Use PG 16.", "rationale": "LTS"})
    with worker_dies_before_the_result(store), pytest.raises(RuntimeError, match="died"):
        ActivityEnvironment().run(acts.run_tool, inp)
    assert [d.decision_id for d in tenant.live_decisions("a1", T0, revision=10**9)] != []
    out = ActivityEnvironment().run(acts.run_tool, inp)  # Temporal's retry
    entries = tenant.all_decisions("a1")
    tool = [d for d in entries if d.source == "tool"]
    assert len(tool) == 1 and tool[0].superseded_by is None and tool[0].rationale == "LTS"
    assert [(d.decision_id, d.superseded_by) for d in entries if d.source != "tool"] == [
        ("P-1", tool[0].decision_id)
    ]
    assert not out.is_error
    (result,) = [e for e in tenant.events("a1") if e.kind == "tool_result"]
    assert result.text.startswith(f"Recorded {tool[0].decision_id} under key 'db.engine'")
    assert "it replaces P-1" in result.text  # the same answer the first attempt would give


def test_the_model_proposes_over_a_persons_decision(store: Store, tenant: TenantStore) -> None:
    """A person's decision stands until a person changes it: the model's decision on its
    key is a proposal the model is told about and sees as pending, and the person's stays
    live; a second proposal replaces the first, and a person may accept it."""
    acts = _activities(store, tenant)
    person = tenant.record_decision("a1", key="db.engine", text="Use PG 18.", source="person")
    out = ActivityEnvironment().run(
        acts.run_tool, _call(tenant, {"key": "db.engine", "text": "Use PG 17."})
    )
    assert not out.is_error
    first = next(d for d in tenant.all_decisions("a1") if d.source == "tool")
    assert (first.proposal_for, first.superseded_by) == (person.decision_id, None)
    later = datetime.now(UTC) + timedelta(minutes=1)
    assert first.status(later) == "proposed"
    assert tenant.decision("a1", person.decision_id).superseded_by is None
    assert [d.decision_id for d in tenant.live_decisions("a1", later)] == [person.decision_id]
    (result,) = [e for e in tenant.events("a1") if e.kind == "tool_result"]
    assert f"as a proposal: the decision on that key, {person.decision_id}, is a person's" in (
        result.text
    )
    # The window's registry holds the person's decision and the proposal, marked pending.
    shown = [registry_line(d) for d in tenant.live_decisions("a1", later, proposals=True)]
    assert shown == [
        f"[{first.decision_id}] db.engine: Use PG 17. (proposed, pending a person:"
        f" {person.decision_id} is a person's decision and holds until a person accepts this)",
        f"[{person.decision_id}] db.engine: Use PG 18.",
    ]
    # The model's next decision on the key (by the store's API, as the tool writes it).
    tenant.record_decision(
        "a1", key="db.engine", text="Use PG 17.1.", source="tool", decision_id="DEC-999"
    )
    second = tenant.decision("a1", first.decision_id).superseded_by
    assert second is not None and tenant.decision("a1", second).proposal_for == person.decision_id
    assert tenant.decision("a1", person.decision_id).superseded_by is None
    accepted = tenant.accept_proposal("a1", second)
    assert (accepted.source, accepted.text, accepted.proposal_for) == (
        "person",
        "Use PG 17.1.",
        None,
    )
    assert tenant.decision("a1", person.decision_id).superseded_by == accepted.decision_id
    assert tenant.decision("a1", second).superseded_by == accepted.decision_id


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ({"text": "Use PG 16."}, "decision key None is not valid"),
        ({"key": "db engine", "text": "Use PG 16."}, "decision key 'db engine' is not valid"),
        ({"key": "db.engine", "text": "  "}, "text must be a non-empty string"),
        ({"key": "db.engine", "text": "x", "why": "y"}, "takes key, text and rationale; not why"),
    ],
)
def test_wrong_arguments_are_an_error_the_model_reads(
    store: Store, tenant: TenantStore, args: dict[str, Any], says: str
) -> None:
    out = ActivityEnvironment().run(_activities(store, tenant).run_tool, _call(tenant, args))
    assert out.is_error
    (result,) = [e for e in tenant.events("a1") if e.kind == "tool_result"]
    assert says in result.text
    assert tenant.all_decisions("a1") == []


def test_the_schema_is_the_golden_one() -> None:
    """Every byte of it is in the stable prefix of an agent that opts in."""
    tool = remember_decision_tool()
    path = Path(__file__).parent / "tool_schemas" / f"{REMEMBER_DECISION}.json"
    got = json.dumps(tool.schema(), indent=2, sort_keys=True) + "\n"
    if os.environ.get("WAKEFUL_UPDATE_SNAPSHOTS") == "1":
        path.write_text(got, encoding="utf-8")
    assert got == path.read_text(encoding="utf-8")
    jsonschema.Draft202012Validator.check_schema(tool.input_schema)
    jsonschema.validate({"key": "db.engine", "text": "Use PG 16."}, tool.input_schema)
