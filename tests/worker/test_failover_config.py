"""Where an agent's fallbacks come from, and what a worker refuses at start: a policy
file's ``[failover]``, ``Agent(fallbacks=...)`` over it, a fallback without a price."""

from __future__ import annotations

from pathlib import Path

import pytest

from wakeful.activities.compile_stages import failover_of
from wakeful.activities.deps import check_agents
from wakeful.agents import Agent
from wakeful.compiler.policy import ModelRoute, WindowPolicy, load_policy_file
from wakeful.errors import ConfigError, UserError
from wakeful.policy_files import load_policy_path
from wakeful.providers.base import ModelProvider

POLICY = """
name = "triage"

[failover]
after_attempts = 2
cooldown_s = 60

[[failover.fallbacks]]
provider = "openai_chat"
model = "gpt-4.1-mini"

[[failover.fallbacks]]
provider = "openai_responses"
model = "gpt-4.1"
"""


class Named:
    def __init__(self, name: str) -> None:
        self.name = name

    async def complete(self, request: object) -> object:  # never called here
        raise NotImplementedError


def providers(name: str) -> ModelProvider:
    return Named("openai" if name.startswith("openai") else name)  # type: ignore[return-value]


def test_a_policy_file_names_fallbacks_in_order_and_the_agents_own_win(tmp_path: Path) -> None:
    path = tmp_path / "triage.toml"
    path.write_text(POLICY, encoding="utf-8")
    policy = load_policy_path(path)
    assert policy.failover.fallbacks == (
        ModelRoute(provider="openai_chat", model="gpt-4.1-mini"),
        ModelRoute(provider="openai_responses", model="gpt-4.1"),
    )
    assert (policy.failover.after_attempts, policy.failover.cooldown_s) == (2, 60)
    agent = Agent(name="triage", instructions="Triage.", policy=str(path))
    assert failover_of(agent, policy) == policy.failover
    own = Agent(
        name="triage", instructions="Triage.", fallbacks=[("anthropic", "claude-haiku-4-5")]
    )
    assert failover_of(own, policy).fallbacks == (
        ModelRoute(provider="anthropic", model="claude-haiku-4-5"),
    )
    assert failover_of(own, policy).cooldown_s == 60  # the policy's rules still apply
    # A policy without failover stores as it did before failover existed.
    assert "failover" not in WindowPolicy().model_dump()
    assert "failover" in policy.model_dump()


def test_a_worker_refuses_a_fallback_it_could_not_price() -> None:
    bad = Agent(name="triage", instructions="Triage.", fallbacks=(("openai_chat", "gpt-9-ultra"),))
    with pytest.raises(
        ConfigError, match=r"agent 'triage'.*no price for openai model 'gpt-9-ultra'"
    ):
        check_agents([bad], providers, {})
    policy = load_policy_file(POLICY.replace("gpt-4.1-mini", "gpt-9-ultra"), "triage.toml")
    by_file = Agent(name="triage", instructions="Triage.", policy="triage")
    with pytest.raises(ConfigError, match="gpt-9-ultra"):
        check_agents([by_file], providers, {"triage": policy})
    check_agents([by_file], providers, {"triage": load_policy_file(POLICY, "triage.toml")})


def test_a_fallback_is_a_provider_and_model_pair() -> None:
    with pytest.raises(UserError, match=r"fallbacks must be a \(provider, model\) pair"):
        Agent(name="triage", instructions="Triage.", fallbacks=[("openai_chat",)])  # type: ignore[list-item]
