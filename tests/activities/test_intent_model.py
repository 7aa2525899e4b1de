"""The model intent classifier against a real Postgres, with fakes behind ModelProvider.

The compile activity runs in a thread and the provider clients live on the worker's event
loop: the tests call ``classify`` from a thread (``asyncio.to_thread``) with the test's
running loop as the worker's, as the worker does. Only the policy's intents are accepted;
any failure falls back to the rules and says so; a retry does not ask the model again.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest

from wakeful.activities.deps import ActivityDeps
from wakeful.activities.intent_model import (
    ACTION,
    HEADER,
    ModelClassifier,
    build_prompt,
    classify_cost,
    intent_classifier,
    intent_request,
    parse_intents,
)
from wakeful.activities.intent_setting import IntentModel
from wakeful.agents import Agent, AgentRegistry
from wakeful.compiler import EstimatingCounter
from wakeful.compiler.blocks import Goal
from wakeful.compiler.intents import ModelChoice, classify_goal, parse_classifier_setting
from wakeful.compiler.policy import IntentRule, WindowPolicy
from wakeful.errors import ConfigError, ProviderError
from wakeful.providers.base import ModelReply, Usage
from wakeful.substrate.store import Store, TenantStore
from wakeful.testing.simulator.intents import intents_text, is_intents_request
from wakeful.worker.settings import load_settings

RULES = (
    IntentRule(name="deploy", patterns=("deploy", "roll out")),
    IntentRule(name="incident", patterns=("outage", "paged")),
)
POLICY = WindowPolicy.default().model_copy(update={"intents": RULES})


@dataclass
class FakeModel:
    """A provider whose answer (or failure) the test sets."""

    answer: str = '["deploy"]'
    error: Exception | None = None
    hang: bool = False
    name: str = "anthropic"
    requests: list[dict[str, Any]] = field(default_factory=list)

    async def complete(self, request: dict[str, Any]) -> ModelReply:
        self.requests.append(request)
        if self.error is not None:
            raise self.error
        if self.hang:
            await asyncio.Event().wait()
        return ModelReply(
            text=self.answer,
            stop_reason="end_turn",
            usage=Usage(input_tokens=120, output_tokens=4),
            model="claude-haiku-4-5",
            provider="anthropic",
        )


def _classifier(
    store: Store,
    tenant: TenantStore,
    fake: FakeModel,
    loop: asyncio.AbstractEventLoop,
    step: str,
    timeout_s: float = 20.0,
) -> ModelClassifier:
    agent = Agent(name="a1", instructions="x", tenant=tenant.name, model="claude-haiku-4-5")
    deps = ActivityDeps(
        store=store,
        agents=AgentRegistry([agent]),
        providers=lambda _name: fake,
        counter=EstimatingCounter(),
        intent_classifier=IntentModel(ModelChoice(), loop, timeout_s=timeout_s),
    )
    chosen = intent_classifier(
        deps, tenant, agent, POLICY, wake_key=f"{step}:intents", compile_key=step
    )
    assert isinstance(chosen, ModelClassifier)
    return chosen


def test_only_the_policys_intents_are_accepted() -> None:
    known = ["deploy", "incident"]
    assert parse_intents('["incident", "deploy"]', known) == ("deploy", "incident")
    assert parse_intents('```json\n["Deploy", "refactor"]\n```', known) == ("deploy",)
    assert parse_intents("Intents: []", known) == ()
    assert parse_intents("deploy, I think", known) == "the answer holds no JSON list"
    assert "not valid JSON" in str(parse_intents("[deploy]", known))


def test_the_request_has_each_renderers_shape() -> None:
    for provider, key in (
        ("anthropic", "system"),
        ("openai_chat", "messages"),
        ("openai_responses", "instructions"),
    ):
        body = intent_request(provider, "m", f"{HEADER}\n...")
        assert key in body and is_intents_request(body), provider


def test_the_setting_accepts_rules_and_models_and_names_itself_when_bad() -> None:
    assert parse_classifier_setting("rules") is None
    assert parse_classifier_setting("model") == ModelChoice()
    assert parse_classifier_setting("model:openai:gpt-4o-mini") == ModelChoice(
        "openai_chat", "gpt-4o-mini"
    )
    with pytest.raises(ValueError, match="unknown provider"):
        parse_classifier_setting("model:acme:small")
    with pytest.raises(ConfigError) as err:
        load_settings(intent_classifier="llm")
    line = str(err.value)
    assert "\n" not in line and "WAKEFUL_INTENT_CLASSIFIER" in line, line


def test_the_simulator_names_intents_by_name_or_pattern() -> None:
    prompt = build_prompt(RULES, "We were paged: please roll out the fix.")
    assert intents_text(prompt) == '["deploy", "incident"]'
    assert intents_text(build_prompt(RULES, "Tidy the README.")) == "[]"
    assert intents_text("hello") is None


async def test_the_model_names_intents_the_rules_would_miss(
    store: Store, tenant: TenantStore
) -> None:
    fake = FakeModel(answer='["deploy", "refactor"]')
    step = f"wf:w-{uuid.uuid4().hex[:8]}:0:compile"
    classifier = _classifier(store, tenant, fake, asyncio.get_running_loop(), step)
    goal = Goal(kind="message", text="Ship build 812 to production.")  # no rule pattern
    classified = await asyncio.to_thread(classify_goal, goal, POLICY, classifier)
    assert classified is not None
    assert classified.goal.intents == ("deploy",)  # "refactor" is not the policy's
    assert classified.note() == "deploy (by model:anthropic:claude-haiku-4-5)"
    assert classifier.cost_usd > 0
    assert "## Intents\n- deploy: deploy; roll out" in fake.requests[0]["messages"][0]["content"]
    logged = tenant.logged(f"{step}:intents")
    assert logged is not None and logged.action == ACTION
    assert logged.detail["cost_usd"] == classifier.cost_usd

    # A retry of the compile reads the first attempt's choice: no second call, and the
    # cost is reported again (the failed attempt's result never reached the wake).
    again = _classifier(store, tenant, fake, asyncio.get_running_loop(), step)
    redo = await asyncio.to_thread(classify_goal, goal, POLICY, again)
    assert redo == classified and len(fake.requests) == 1
    assert classify_cost(again) == classify_cost(classifier) > 0
    # The wake's next compile reads it too, and reports no cost: the wake has counted it.
    later = _classifier(store, tenant, fake, asyncio.get_running_loop(), step)
    later.caller = step.replace(":0:", ":1:")
    assert await asyncio.to_thread(classify_goal, goal, POLICY, later) == classified
    assert len(fake.requests) == 1 and classify_cost(later) == 0.0


@pytest.mark.parametrize(
    ("fake", "why"),
    [
        (
            FakeModel(error=ProviderError("anthropic: 529 overloaded", retryable=True)),
            "529",
        ),
        (FakeModel(answer="Sure! The goal is about a deploy."), "no JSON list"),
        (FakeModel(hang=True), "no answer within"),
    ],
)
async def test_a_failed_call_falls_back_to_the_rules(
    store: Store, tenant: TenantStore, fake: FakeModel, why: str
) -> None:
    step = f"wf:w-{uuid.uuid4().hex[:8]}:0:compile"
    classifier = _classifier(store, tenant, fake, asyncio.get_running_loop(), step, timeout_s=0.2)
    goal = Goal(kind="message", text="Please roll out build 812.")
    classified = await asyncio.to_thread(classify_goal, goal, POLICY, classifier)
    assert classified is not None and classified.goal.intents == ("deploy",)
    assert classified.classifier.startswith("rules (model failed: "), classified.classifier
    assert why in classified.note()
    logged = tenant.logged(f"{step}:intents")
    assert logged is not None and logged.status == "rules"


async def test_classifying_on_the_event_loop_falls_back_instead_of_blocking_it(
    store: Store,
    tenant: TenantStore,
) -> None:
    fake = FakeModel()
    step = f"wf:w-{uuid.uuid4().hex[:8]}:0:compile"
    classifier = _classifier(store, tenant, fake, asyncio.get_running_loop(), step)
    assert classifier.classify("roll out build 9") == ("deploy",)
    assert "event loop" in classifier.name and not fake.requests


def test_rules_stay_the_default_and_a_policy_without_intents_asks_nothing(
    store: Store,
    tenant: TenantStore,
) -> None:
    agent = Agent(name="a1", instructions="x", tenant=tenant.name)
    deps = ActivityDeps(
        store=store,
        agents=AgentRegistry([agent]),
        providers=lambda _name: FakeModel(),
        counter=EstimatingCounter(),
    )
    assert intent_classifier(deps, tenant, agent, POLICY, wake_key="w", compile_key="k") is None
    deps.intent_classifier = IntentModel(ModelChoice(), asyncio.new_event_loop())
    try:
        policy = WindowPolicy.default()
        assert intent_classifier(deps, tenant, agent, policy, wake_key="w", compile_key="k") is None
    finally:
        deps.intent_classifier.loop.close()


async def test_a_named_model_without_a_price_stops_the_worker_with_one_line() -> None:
    from wakeful.worker.serve import ProviderCache, check_intent_classifier

    settings = load_settings(
        intent_classifier="model:anthropic:claude-nonesuch",
        anthropic_base_url="http://127.0.0.1:9",  # never called: the check builds a client
    )
    providers = ProviderCache(settings)
    try:
        with pytest.raises(ConfigError) as err:
            check_intent_classifier(settings, providers)
        line = str(err.value)
        assert line.startswith(
            "WAKEFUL_INTENT_CLASSIFIER=model:anthropic:claude-nonesuch: no price"
        )
        assert "\n" not in line
        ok = load_settings(intent_classifier="model:anthropic:claude-haiku-4-5")
        assert check_intent_classifier(ok, providers) == ModelChoice(
            "anthropic", "claude-haiku-4-5"
        )
    finally:
        await providers.aclose()
