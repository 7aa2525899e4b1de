"""One rule for tenant and agent names, at every door, so that no two (tenant, agent) pairs
can share a workflow id: a ':' in either name once let tenant ``corp:ops``'s agent
``pager`` run in tenant ``corp``'s workflow for an agent ``ops:pager``."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import SecretStr, ValidationError

from tests.orchestration.helpers import child_bundle
from wakeful.activities.child import child_agent
from wakeful.agents import Agent, AgentRegistry, AgentRuntime
from wakeful.errors import ConfigError, UserError
from wakeful.substrate.store import Store
from wakeful.worker.ingress_auth import TenantSecrets
from wakeful.worker.settings import load_settings
from wakeful.workflows.state import child_workflow_id, parse_workflow_id, workflow_id

BAD = ["corp:ops", "ops:pager", "a/b", "", " corp", "-x", "é", "x" * 65, "a\x00b", "a\nb"]


def _agent(**fields: object) -> Agent:
    return Agent(**{"name": "pager", "instructions": "Page people.", **fields})  # type: ignore[arg-type]


def _runtime(tenant: str, name: str) -> AgentRuntime:
    return AgentRuntime(tenant=tenant, name=name, provider="anthropic", model="claude-sonnet-4-6")


def test_corp_ops_pager_can_no_longer_address_corps_agent_ops_pager() -> None:
    # Before: both pairs built "wakeful-agent:corp:ops:pager", one workflow for two agents.
    with pytest.raises(ConfigError, match="tenant name 'corp:ops'"):
        workflow_id("corp:ops", "pager")
    with pytest.raises(ConfigError, match="agent name 'ops:pager'"):
        workflow_id("corp", "ops:pager")
    with pytest.raises(ConfigError, match="tenant name 'corp:ops'"):
        child_workflow_id("corp:ops", "pager/child/1")
    # Neither agent can be defined, nor its runtime carried in a crafted workflow input.
    with pytest.raises(ConfigError, match="tenant name 'corp:ops'"):
        _agent(tenant="corp:ops")
    with pytest.raises(ConfigError, match="agent name 'ops:pager'"):
        _agent(name="ops:pager", tenant="corp")
    with pytest.raises(ValidationError, match="tenant name 'corp:ops' is invalid"):
        _runtime("corp:ops", "pager")
    with pytest.raises(ValidationError, match="agent name 'ops:pager' is invalid"):
        AgentRuntime.model_validate(
            _runtime("corp", "pager").model_dump(mode="json") | {"name": "ops:pager"}
        )
    # Nor can the webhook secrets name such a tenant (the ingress would serve it).
    with pytest.raises(ConfigError, match=r"WEBHOOK_TENANT_SECRETS.*tenant name 'corp:ops'"):
        load_settings(webhook_tenant_secrets={"corp:ops": "s3cret"})
    with pytest.raises(ConfigError, match="tenant name 'corp:ops'"):
        TenantSecrets({"corp:ops": (SecretStr("s3cret"),)})
    # Valid names keep the id format running workflows already have.
    assert workflow_id("corp", "pager") == "wakeful-agent:corp:pager"
    assert child_workflow_id("corp", "pager/child/2") == "wakeful-child:corp:pager/child/2"


@pytest.mark.parametrize("bad", BAD)
def test_every_door_refuses_a_bad_name_in_one_line(bad: str) -> None:
    for refuse in (
        lambda: _agent(tenant=bad),
        lambda: _agent(name=bad),
        lambda: workflow_id(bad, "pager"),
        lambda: workflow_id("corp", bad),
        lambda: load_settings(tenant=bad),
        lambda: load_settings(webhook_tenant_secrets={bad: "s"}),
    ):
        with pytest.raises(ConfigError) as caught:
            refuse()
        message = str(caught.value)
        assert "\n" not in message and "A-Z a-z 0-9 _ . -" in message, message
    with pytest.raises(ValidationError):
        _runtime(bad, "pager")
    with pytest.raises(ValidationError):
        _runtime("corp", bad)


def test_the_store_scopes_only_valid_tenants(store: Store) -> None:
    with pytest.raises(ConfigError, match="tenant name 'corp:ops'"):
        store.tenant("corp:ops")
    assert store.tenant("corp").name == "corp"


def test_child_names_are_built_by_wakeful_never_chosen() -> None:
    with pytest.raises(ConfigError, match="agent name 'pager/child/1'"):
        _agent(name="pager/child/1")
    parent = _agent(tenant="corp")
    bundle = child_bundle(
        tenant="corp", parent="pager", child="pager/child/1", kind="k", call_id="c1",
        frame="f", timeout_s=30.0, max_result_chars=100,
    )  # fmt: skip
    child = child_agent(parent, bundle)
    assert (child.name, child.runtime().name) == ("pager/child/1", "pager/child/1")
    AgentRegistry([child])  # the registry takes it
    # A bundle whose child is not the parent's is not a child of it.
    with pytest.raises(ConfigError, match="agent name 'other/child/1'"):
        child_agent(parent, bundle.model_copy(update={"child": "other/child/1"}))
    with pytest.raises(ConfigError):
        dataclasses.replace(child, name="pager/child/1:x")


# Text that leans on what names are made of, separators included.
_NAMEISH = st.text(alphabet=st.sampled_from("ab0_.-:/ \x00é"), max_size=8)
_NAMES = st.one_of(
    _NAMEISH, st.text(max_size=8), st.sampled_from(["corp", "corp:ops", "a/child/1"])
)


@given(_NAMES, _NAMES, _NAMES, _NAMES)
def test_workflow_ids_are_injective_and_round_trip(t1: str, a1: str, t2: str, a2: str) -> None:
    ids: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for tenant, agent in ((t1, a1), (t2, a2)):
        for build in (workflow_id, child_workflow_id):
            try:
                wf_id = build(tenant, agent)
            except ConfigError:
                continue  # refused: it addresses nothing
            assert parse_workflow_id(wf_id) == (tenant, agent)
            ids.setdefault((build.__name__, wf_id), set()).add((tenant, agent))
            # What builds an id is what a runtime accepts, and the other way round.
            assert _runtime(tenant, agent).name == agent
    assert all(len(pairs) == 1 for pairs in ids.values()), ids


@given(_NAMES, _NAMES)
def test_a_runtime_accepts_exactly_the_names_an_id_can_be_built_from(
    tenant: str, agent: str
) -> None:
    try:
        workflow_id(tenant, agent)
        built = True
    except ConfigError:
        built = False
    try:
        _runtime(tenant, agent)
        accepted = True
    except ValidationError:
        accepted = False
    assert built == accepted


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"max_tokens_per_wake": -1}, "max_tokens_per_wake must be an integer >= 1 (got -1)"),
        ({"max_tokens_per_wake": 0}, "max_tokens_per_wake must be an integer >= 1 (got 0)"),
        ({"max_model_calls_per_wake": 0}, "max_model_calls_per_wake must be an integer >= 1"),
        ({"max_tool_calls_per_wake": -2}, "max_tool_calls_per_wake must be an integer >= 0"),
        ({"max_parallel_children": 0}, "max_parallel_children must be an integer >= 1"),
        ({"max_tokens_per_wake": 1.5}, "max_tokens_per_wake must be an integer >= 1 (got 1.5)"),
        ({"policy": ""}, "policy must be a non-empty name"),
        ({"provider": " "}, "provider must be a non-empty name"),
    ],
)
def test_bad_budgets_are_refused_when_the_agent_is_defined(
    fields: dict[str, object], says: str
) -> None:
    with pytest.raises(UserError) as caught:
        _agent(**fields)
    assert str(caught.value).startswith("agent 'pager': ") and says in str(caught.value)
    assert "\n" not in str(caught.value)


def test_bad_tool_and_delegation_limits_are_refused_when_defined() -> None:
    from pydantic import BaseModel

    from wakeful.agents import Delegation, Tool

    with pytest.raises(UserError, match=r"tool 't': max_attempts must be an integer >= 1"):
        Tool(name="t", description="d", input_schema={}, fn=lambda a, c: "", max_attempts=0)
    with pytest.raises(UserError, match=r"tool 't': timeout_s must be a number > 0"):
        Tool(name="t", description="d", input_schema={}, fn=lambda a, c: "", timeout_s=-1)
    with pytest.raises(UserError, match=r"delegation 'd': max_tokens must be an integer >= 1"):
        Delegation(name="d", description="d", output=BaseModel, max_tokens=0)
