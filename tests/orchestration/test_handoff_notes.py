"""A session's closing handoff note is written by the agent's model from the session's turns,
checked before use, and its cost is the agent's; a failed or rejected note falls back to the
template note with the reason recorded, and the session still ends."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from temporalio.testing import ActivityEnvironment, WorkflowEnvironment

from tests.e2e.harness import make_deps
from tests.orchestration.helpers import agent_handle, scout, serving_agent
from wakeful.activities.handoff_note import check_note, parse_note
from wakeful.activities.sessions import SessionActivities
from wakeful.agents import Agent, AgentRegistry
from wakeful.compiler.ledger import Ledger
from wakeful.consolidation.items import SpanItem
from wakeful.contracts import EndSessionIn, WakeRef
from wakeful.errors import UserError
from wakeful.substrate.records import (
    ConsolidationLogRecord,
    DecisionRecord,
    EventIn,
    HandoffBody,
    HandoffRecord,
)
from wakeful.substrate.store import Store
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.serve import register_agent
from wakeful.workflows.agent import AgentWorkflow
from wakeful.workflows.state import workflow_id

ASKS = (
    "Goal: migrate the billing service to Postgres 16 as DEC-7 says.",
    "Blocked: waiting on the staging credentials from ops.",
    "what is the weather like",
)


def _registered(store: Store, agent: Agent) -> None:
    store.tenant(agent.tenant).register_decision(
        DecisionRecord(
            decision_id="DEC-7",
            agent=agent.name,
            text="Billing moves to Postgres 16.",
            source="person",
        )
    )


def _session_end(store: Store, agent: Agent) -> HandoffRecord:
    (note,) = [
        n for n in store.tenant(agent.tenant).handoffs(agent.name) if "session-end" in n.step_key
    ]
    return note


def _logged(store: Store, agent: Agent, note: HandoffRecord) -> ConsolidationLogRecord:
    """The record of which note was written, and why."""
    logged = store.tenant(agent.tenant).logged(f"{note.step_key}:note")
    assert logged is not None and logged.action == "handoff_note"
    return logged


async def _session(
    env: WorkflowEnvironment, store: Store, agent: Agent, sim: SimulatorServer, script: Script
) -> tuple[float, float, str]:
    """Three wakes and a ``/handoff``: (the wakes' cost, the agent's spend, the session)."""
    async with serving_agent(env.client, store, agent, sim, script=script) as served:
        results = [await served.ask(ask) for ask in ASKS]
        done = await served.ask("/handoff end of day")
        status = await agent_handle(env.client, agent).query(AgentWorkflow.status)
    assert done.status == "handoff" and done.handoff_id > 0 and not status.session_open
    return sum(r.cost_usd for r in results), status.cost_usd, results[0].session_id


async def test_the_next_wakes_ledger_says_which_note_was_written(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    env = temporal_skipping
    async with serving_agent(env.client, store, agent, osim) as served:
        one = await served.ask("Goal: tidy the docs.")
        await served.ask("/handoff")
        two = await served.ask("what next?")
    ts = store.tenant(agent.tenant)
    ledger = Ledger.model_validate_json(ts.get_blob(ts.compiles(two.wake_id)[0].ledger_hash))
    session = one.session_id.rsplit(":", 1)[-1]
    (line,) = [n for n in ledger.notes if n.startswith(f"session {session} note: ")]
    assert line.startswith(f"session {session} note: model (2 turn(s) summarised, checks passed)")
    assert line.split(", $")[-1].replace(".", "").isdigit()  # the note call's cost


async def test_the_model_writes_the_note_from_the_sessions_turns_and_its_cost_is_spent(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    _registered(store, agent)
    wakes, spent, session = await _session(temporal_skipping, store, agent, osim, Script())
    note = _session_end(store, agent)
    body = note.body
    # From the whole session, not only its last ask and reply.
    assert "migrate the billing service to Postgres 16" in body.goal
    assert body.decisions == ["DEC-7"]
    assert body.blockers == ["Blocked: waiting on the staging credentials from ops."]
    assert body.current_state.startswith(f"Session {session} ended (explicit /handoff: end of day)")
    logged = _logged(store, agent, note)
    assert logged.status == "model", logged.detail["reason"]
    # The note call is priced and added to the agent's spend.
    cost = logged.detail["cost_usd"]
    assert cost > 0 and abs(spent - (wakes + cost)) < 1e-9


async def test_a_provider_error_on_the_note_call_writes_the_template_note(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    _registered(store, agent)
    script = Script.parse({"handoff": [{"error": {"status": 400}}]})
    wakes, spent, session = await _session(temporal_skipping, store, agent, osim, script)
    note = _session_end(store, agent)
    logged = _logged(store, agent, note)
    assert logged.status == "template"
    assert logged.detail["reason"].startswith("the note call failed:")
    # The template: goal and state from the last wake's ask and reply.
    assert note.body.goal == ASKS[-1] and note.body.blockers == []
    assert note.body.current_state.startswith(f"Session {session} ended (explicit /handoff")
    assert abs(spent - wakes) < 1e-9


async def test_a_note_naming_a_decision_that_does_not_exist_is_rejected(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    _registered(store, agent)
    invented = {
        "goal": "Migrate the billing service.",
        "current_state": "Waiting on credentials.",
        "decisions": ["DEC-7", "DEC-99"],
        "blockers": ["staging credentials"],
    }
    script = Script.parse({"handoff": [{"text": json.dumps(invented)}]})
    wakes, spent, _ = await _session(temporal_skipping, store, agent, osim, script)
    note = _session_end(store, agent)
    logged = _logged(store, agent, note)
    assert logged.status == "template"
    assert logged.detail["reason"] == "the model's note was rejected: decisions: DEC-99"
    assert "DEC-99" not in note.body.render() and note.body.goal == ASKS[-1]
    # The rejected call was still made and paid for.
    assert logged.detail["cost_usd"] > 0 and spent > wakes


# --- the activity on its own: retries, promoted ids, unparsable answers ----------------------


def _ended_session(store: Store, agent: Agent, *asks: str) -> EndSessionIn:
    """A session whose turns are ``asks`` (each answered), ended now by the activity's input."""
    ts, session = store.tenant(agent.tenant), f"{agent.name}:s0001"
    turns = [(role, text) for ask in asks for role, text in (("user", ask), ("assistant", "Ok."))]
    ts.append_events(
        agent.name,
        [
            EventIn(
                step_key=f"{session}:{n}",
                kind="turn",
                role=role,
                text=text,
                session_id=session,
                wake_id=f"{agent.name}:1",
                event_time=datetime.now(UTC),
            )
            for n, (role, text) in enumerate(turns)
        ],
    )
    ref = WakeRef(
        tenant=agent.tenant,
        agent=agent.name,
        wake_id=f"{agent.name}:1",
        session_id=session,
        workflow_id=workflow_id(agent.tenant, agent.name),
        number=1,
    )
    return EndSessionIn(wake=ref, reason="explicit /handoff", at=datetime.now(UTC))


async def test_a_retried_session_end_asks_the_model_once_and_keeps_one_note(
    store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    """A rule stated in the session is promoted as it ends; the note must name it, and does."""
    inp = _ended_session(store, agent, "Never deploy on Fridays.", "Next: tag the release.")
    key = uuid.uuid4().hex
    acts = SessionActivities(make_deps(store, AgentRegistry([agent]), osim, key))
    first = await ActivityEnvironment().run(acts.end_session, inp)
    again = await ActivityEnvironment().run(acts.end_session, inp)  # a retry
    assert (first.note, again.note) == ("model", "model"), first.note_reason
    assert again.handoff_id == first.handoff_id and again.cost_usd == first.cost_usd > 0
    assert len(osim.simulator.calls(key)) == 1
    (note,) = store.tenant(agent.tenant).handoffs(agent.name)
    (rule,) = store.tenant(agent.tenant).all_decisions(agent.name)
    assert note.body.decisions == [rule.decision_id] and rule.decision_id.startswith("LB-")
    assert note.body.next_actions == ["Next: tag the release."]


async def test_an_unparsable_answer_falls_back_to_the_template(
    store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    inp = _ended_session(store, agent, "Look at the logs.")
    key = uuid.uuid4().hex
    osim.simulator.set_script(Script.parse({"handoff": [{"text": "All good here!"}]}), scope=key)
    acts = SessionActivities(make_deps(store, AgentRegistry([agent]), osim, key))
    out = await ActivityEnvironment().run(acts.end_session, inp)
    assert out.note == "template" and out.handoff_id > 0
    assert out.note_reason == (
        "the model's note was rejected: parse: the answer holds no JSON object"
    )


def test_a_note_that_drops_a_decision_the_session_named_fails_the_checks() -> None:
    at = datetime.now(UTC)
    said = "Ship it under DEC-7 by 2026-12-01."
    turn = SpanItem(id=5, kind="turn", role="user", text=said, at=at)
    registry = [DecisionRecord(decision_id="DEC-7", agent="a", text="Ship in December.")]
    note = HandoffBody(goal="Ship it by 2026-12-02.", current_state="Waiting.", evidence=["e9"])
    result = check_note(note, [turn], registry)
    assert [(c.name, c.missing) for c in result.checks if not c.passed] == [
        ("registry_ids", ("DEC-7",)),
        ("invented", ("2026-12-02",)),
        ("evidence", ("e9",)),
    ]
    assert parse_note('```json\n{"goal": "g", "current_state": ""}\n```') == (
        "parse: goal or current_state is empty"
    )


def test_a_bad_handoff_notes_setting_is_refused_in_one_line() -> None:
    with pytest.raises(UserError, match=r"handoff_notes is 'llm'; use 'model' or 'template'$"):
        Agent(name="scout", instructions="x", handoff_notes="llm")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="handoff_note_tokens"):
        Agent(name="scout", instructions="x", handoff_note_tokens=0)


# --- the note call reads the session's transcript from the agent's cache ---------------------


@pytest.mark.parametrize(
    ("provider", "model"),
    [
        ("anthropic", "claude-sonnet-4-6"),
        ("openai", "gpt-4o-mini"),
        ("openai-responses", "gpt-4o-mini"),
    ],
)
async def test_the_note_call_reads_the_sessions_transcript_from_the_agents_cache(
    temporal_skipping: WorkflowEnvironment,
    store: Store,
    osim: SimulatorServer,
    tmp_path: Path,
    provider: str,
    model: str,
) -> None:
    """The note is asked for after the agent's own last request (same tools, system and
    messages), so its transcript is a cache read; only the ask after it is new input."""
    a = scout(tmp_path, tenant=f"orch-{uuid.uuid4().hex[:10]}", provider=provider, model=model)
    register_agent(store.tenant(a.tenant), a)
    _registered(store, a)
    # Turns long enough that the transcript outweighs the ask (which lists their openings).
    long_asks = [f"{ask} {_FILLER}" for ask in ASKS]
    async with serving_agent(temporal_skipping.client, store, a, osim) as served:
        for ask in long_asks:
            await served.ask(ask)
        done = await served.ask("/handoff end of day")
    assert done.status == "handoff"
    note = _session_end(store, a)
    logged = _logged(store, a, note)
    assert logged.status == "model", logged.detail["reason"]
    assert note.body.decisions == ["DEC-7"]
    usage = logged.detail["usage"]
    read, written = usage["cache_read_input_tokens"], usage["cache_creation_input_tokens"]
    total = usage["input_tokens"] + read + written
    # Before, the transcript was sent again under the note's own system text: all uncached.
    assert usage["input_tokens"] + written < 0.2 * total, usage


_FILLER = " ".join(
    f"Context line {n}: the billing tables keep their indexes and the reports read them."
    for n in range(40)
)


async def test_a_session_ending_after_its_cache_went_cold_sends_the_transcript_in_the_ask(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    """Past the prefix's TTL, re-sending the agent's request would write its cache again
    for one call (above plain input on Anthropic): the note is asked with the transcript."""
    _registered(store, agent)
    async with serving_agent(temporal_skipping.client, store, agent, osim) as served:
        last = [await served.ask(f"{ask} {_FILLER}") for ask in ASKS][-1]
        key = served.key
    ts = store.tenant(agent.tenant)
    (wake,) = [w for w in ts.wakes(agent.name) if w.wake_id == last.wake_id]
    assert wake.finished_at is not None
    ref = WakeRef(
        tenant=agent.tenant,
        agent=agent.name,
        wake_id=wake.wake_id,
        session_id=wake.session_id,
        workflow_id=workflow_id(agent.tenant, agent.name),
        number=wake.number,
    )
    later = wake.finished_at + timedelta(hours=2)  # past the 1h breakpoints
    acts = SessionActivities(make_deps(store, AgentRegistry([agent]), osim, key))
    out = await ActivityEnvironment().run(
        acts.end_session, EndSessionIn(wake=ref, reason="idle", at=later)
    )
    assert out.note == "model", out.note_reason
    usage = ts.logged(f"{ts.handoffs(agent.name)[-1].step_key}:note").detail["usage"]  # type: ignore[union-attr]
    assert usage["cache_read_input_tokens"] == 0 and usage["input_tokens"] > 0, usage


async def test_the_note_is_asked_of_the_agents_handoff_model(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    """``Agent(handoff_model=...)``: the note's model is that one, not the agent's (so the
    transcript goes in the ask: the other model has no cache of the agent's prefix)."""
    from dataclasses import replace

    assert agent.model != "claude-haiku-4-5"
    a = replace(agent, handoff_model="claude-haiku-4-5")
    _registered(store, a)
    await _session(temporal_skipping, store, a, osim, Script())
    logged = _logged(store, a, _session_end(store, a))
    assert logged.status == "model", logged.detail["reason"]
    assert logged.detail["model"] == "claude-haiku-4-5"
    assert logged.detail["usage"]["cache_read_input_tokens"] == 0
