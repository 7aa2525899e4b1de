"""An agent's runtime settings (``wakeful.runtime_settings``): consolidation (minimum age,
kept events, summary model), pacing (keep-warm limit, idle time before a handoff), the
handoff note's model and redaction rules, set on ``Agent`` or in its policy file's tables;
each reaches what it governs, an unset one leaves the default (and the stored runtime) as
it was, and a bad one is refused by one line naming it."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from tests.activities.test_tool_activity import _call, _env
from wakeful.activities.deps import ActivityDeps
from wakeful.activities.tools import ToolActivities
from wakeful.agents import Agent, AgentRegistry, Tool, ToolContext
from wakeful.compiler import EstimatingCounter
from wakeful.consolidation.policy import ConsolidationPolicy, consolidation_policy
from wakeful.errors import ConfigError, UserError
from wakeful.policy_files import load_policy_and_settings, load_policy_path
from wakeful.substrate.store import Store, TenantStore
from wakeful.workflows.pacing import PacingPolicy
from wakeful.workflows.state import AgentInput

POLICY = """\
name = "ops"

[budget]
context_limit = 100000

[consolidation]
min_age = "10m"
keep_events = 10
summary_model = "claude-haiku-4-5"

[pacing]
keep_warm_calls = 0
handoff_after_idle = "30m"

[handoff]
model = "claude-haiku-4-5"

[redaction]
email = true
"""


def _agent(**kw: Any) -> Agent:
    return Agent(name="ops", instructions="Keep services healthy.", **kw)


def test_no_settings_leave_the_runtime_and_its_inputs_as_they_were() -> None:
    rt = _agent().runtime()
    assert rt.settings is None and "settings" not in rt.model_dump()
    assert consolidation_policy(rt) == ConsolidationPolicy()
    inp = AgentInput(runtime=rt)
    assert (inp.pacing, inp.session_idle) == (PacingPolicy(), timedelta(hours=1))
    assert not inp.session_idle_set, "the default hour: pacing may continue a session past it"


def test_agent_settings_reach_consolidation_and_pacing() -> None:
    rt = _agent(
        consolidation_min_age="5m",
        consolidation_keep_events=3,
        summary_model="claude-haiku-4-5",
        keep_warm_calls=1,
        handoff_after_idle=900,
    ).runtime()
    policy = consolidation_policy(rt)
    assert (policy.min_age, policy.keep_recent_events, policy.summary_model) == (
        timedelta(minutes=5),
        3,
        "claude-haiku-4-5",
    )
    inp = AgentInput(runtime=rt)
    assert inp.pacing.max_keep_warm_calls == 1 and inp.pacing.allow_keep_warm
    assert inp.session_idle == timedelta(minutes=15) and inp.session_idle_set
    # As read back from a workflow history: the input it started with, whatever the runtime.
    again = AgentInput.model_validate(AgentInput(runtime=_agent().runtime()).model_dump())
    again = AgentInput.model_validate({**again.model_dump(), "runtime": rt.model_dump()})
    assert again.pacing == PacingPolicy() and again.session_idle == timedelta(hours=1)
    assert not again.session_idle_set
    # Round trip through the stored runtime.
    assert type(rt).model_validate(rt.model_dump()).settings == rt.settings


def test_an_idle_limit_is_set_by_a_caller_or_by_an_input_recorded_before_it_was_told() -> None:
    rt = _agent().runtime()
    assert AgentInput(runtime=rt, session_idle=timedelta(hours=2)).session_idle_set
    recorded = AgentInput(runtime=rt).model_dump()
    del recorded["session_idle_set"]  # an input of a history recorded before the field
    assert AgentInput.model_validate(recorded).session_idle_set


def test_a_policy_files_tables_are_settings_and_the_agent_wins(tmp_path: Path) -> None:
    path = tmp_path / "ops.toml"
    path.write_text(POLICY)
    policy, settings = load_policy_and_settings(path)
    plain = tmp_path / "plain.toml"
    plain.write_text(POLICY.split("[consolidation]")[0])
    # The compile policy is the one without the tables: same fingerprint, same ledgers.
    assert policy.fingerprint == load_policy_path(plain).fingerprint
    assert policy.budget.context_limit == 100_000
    assert settings is not None
    assert settings.consolidation_min_age == timedelta(minutes=10)
    assert (settings.keep_warm_calls, settings.handoff_model) == (0, "claude-haiku-4-5")
    assert settings.redaction == {"email": True}
    rt = _agent(policy=str(path), consolidation_keep_events=4).runtime()
    assert rt.settings is not None
    assert rt.settings.consolidation_keep_events == 4  # the agent's own wins
    assert rt.settings.consolidation_min_age == timedelta(minutes=10)  # the file's
    inp = AgentInput(runtime=rt)
    assert not inp.pacing.allow_keep_warm and inp.session_idle == timedelta(minutes=30)
    assert inp.session_idle_set, "the policy file's handoff_after_idle is a set limit"
    AgentRegistry([_agent(policy=str(path))])  # the registry reads the file as a policy


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"consolidation_min_age": "soon"}, "consolidation_min_age is 'soon': expected a duration"),
        ({"consolidation_min_age": -5}, "consolidation_min_age is -5: must not be negative"),
        ({"consolidation_keep_events": -1}, "consolidation_keep_events is -1: Input should be"),
        ({"keep_warm_calls": -2}, "keep_warm_calls is -2: Input should be greater than or equal"),
        ({"handoff_after_idle": "0s"}, "handoff_after_idle is '0s': must be a positive duration"),
        ({"summary_model": ""}, "summary_model is '': String should have at least 1 character"),
        ({"redaction": {"emails": True}}, "redaction is {'emails': True}: no redaction rule named"),
    ],
)
def test_a_bad_agent_setting_is_one_line_naming_it(kw: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError) as err:
        _agent(**kw)
    assert str(err.value).startswith("agent 'ops': ") and message in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('[consolidation]\nmin_age = "later"\n', "consolidation.min_age: expected a duration"),
        ("[consolidation]\nkeep = 3\n", "consolidation.keep: unknown setting; consolidation takes"),
        ("[pacing]\nkeep_warm_calls = -1\n", "pacing.keep_warm_calls: Input should be greater"),
        ('[redaction]\nemail = "yes"\n', "redaction.email: expected true or false"),
        ("[redaction]\nphone = true\n", "redaction: no redaction rule named phone"),
        ('[handoff]\nmodel = ""\n', "handoff.model: String should have at least 1 character"),
    ],
)
def test_a_bad_policy_file_setting_is_one_line_naming_file_and_key(
    tmp_path: Path, table: str, message: str
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(table)
    with pytest.raises(ConfigError) as err:
        AgentRegistry([_agent(policy=str(path))])
    assert f"bad policy file {path}: {message}" in str(err.value), str(err.value)
    assert "\n" not in str(err.value)


EMAIL = "Reach the on-call at alice.smith@example.com today."


def _tool_activities(store: Store, tenant: TenantStore, **kw: Any) -> ToolActivities:
    def probe(args: dict[str, Any], ctx: ToolContext) -> str:
        return EMAIL

    agent = Agent(
        name="a1",
        instructions="x",
        tools=(Tool("probe", "Probe.", {"type": "object", "properties": {}}, probe),),
        tenant=tenant.name,
        **kw,
    )
    deps = ActivityDeps(
        store=store,
        agents=AgentRegistry([agent]),
        providers=lambda name: None,  # type: ignore[arg-type,return-value]
        counter=EstimatingCounter(),
    )
    return ToolActivities(deps)


def test_email_redaction_is_switched_on_per_agent(store: Store, tenant: TenantStore) -> None:
    env: ActivityEnvironment = _env()
    plain = _call(tenant)
    env.run(_tool_activities(store, tenant).run_tool, plain)
    redacting = _tool_activities(store, tenant, redaction={"email": True})
    inp = _call(tenant, plain.wake)
    _env().run(redacting.run_tool, inp)
    kept, redacted = tenant.events("a1", wake_id=plain.wake.wake_id)
    assert kept.text == EMAIL  # off by default: many agents need addresses
    assert redacted.text == "Reach the on-call at [REDACTED:email] today."
    assert redacted.meta.get("redacted") == "email=1"
