"""The rules intent classifier: the policy's ``[[intents]]``, whole words, case-insensitive,
deterministic; it runs only for a goal that came without intents."""

from __future__ import annotations

import pytest

from tests.compiler.policy_texts import DEPLOYS_TRIGGER, intent_rule
from wakeful.compiler import WindowPolicy, load_policy
from wakeful.compiler.blocks import Goal, GoalKind
from wakeful.compiler.intents import IntentClassifier, RulesClassifier, classify_goal
from wakeful.compiler.policy import IntentRule
from wakeful.compiler.triggers import firing
from wakeful.errors import PolicyError

POLICY = (
    "version = 1\n"
    + DEPLOYS_TRIGGER
    + intent_rule("deploy", "deploy", "roll out", "rollout")
    + intent_rule("incident", "outage", "paged")
)


def _goal(text: str, **kw: object) -> Goal:
    return Goal(kind=GoalKind.MESSAGE, text=text, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "intents"),
    [
        ("Deploy 812 failed", ("deploy",)),
        ("please ROLL   OUT the fix", ("deploy",)),
        ("an outage after the rollout", ("deploy", "incident")),  # in the rules' order
        ("the redeployment plan", ()),  # whole words only
        ("rolling out", ()),
        ("", ()),
    ],
)
def test_rules_match_whole_words_case_insensitively(text: str, intents: tuple[str, ...]) -> None:
    classifier = RulesClassifier(load_policy(POLICY).intents)
    assert classifier.classify(text) == intents
    assert classifier.classify(text) == RulesClassifier(load_policy(POLICY).intents).classify(text)


def test_a_goal_without_intents_is_classified_and_its_trigger_fires() -> None:
    policy = load_policy(POLICY)
    goal = _goal("We roll out build 812 at noon.")
    assert firing(policy.triggers, goal) == []
    classified = classify_goal(goal, policy)
    assert classified is not None
    assert classified.goal.intents == ("deploy",) and classified.goal.text == goal.text
    assert classified.note() == "deploy (by rules)"
    assert [t.name for t in firing(policy.triggers, classified.goal)] == ["deploys"]


def test_classification_runs_only_when_it_has_something_to_do() -> None:
    policy = load_policy(POLICY)
    assert classify_goal(_goal("deploy it", intents=("review",)), policy) is None
    assert classify_goal(_goal("deploy it"), WindowPolicy.default()) is None  # no rules
    nothing = classify_goal(_goal("hello"), policy)
    assert nothing is not None and nothing.intents == () and nothing.note() == "none (by rules)"


def test_another_classifier_fits_the_protocol() -> None:
    class Fixed:
        name = "fixed"

        def classify(self, text: str) -> tuple[str, ...]:
            return ("triage", "triage")

    classifier: IntentClassifier = Fixed()
    classified = classify_goal(_goal("anything"), WindowPolicy.default(), classifier)
    assert classified is not None and classified.goal.intents == ("triage",)
    assert classified.note() == "triage (by fixed)"


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("[[intents]]\nname = 'x'\npatterns = []\n", "intents[0].patterns"),
        ("[[intents]]\nname = 'x'\npatterns = [' ']\n", "intents[0]"),
        ("[[intents]]\nname = ''\npatterns = ['a']\n", "intents[0].name"),
        (
            "[[intents]]\nname = 'x'\npatterns = ['a']\n"
            "[[intents]]\nname = 'x'\npatterns = ['b']\n",
            "intent names must be unique: x",
        ),
    ],
)
def test_bad_intent_rules_name_the_field(text: str, where: str) -> None:
    with pytest.raises(PolicyError) as err:
        load_policy(text)
    assert where in str(err.value)


def test_a_policy_without_intent_rules_keeps_its_fingerprint() -> None:
    # Stored policies and ledgers from before intent rules keep matching their fingerprint.
    assert "intents" not in WindowPolicy.default().model_dump()
    # The default's own values moved with evidence admission (retrieval.*), so its
    # fingerprint is new; intent rules, absent, add nothing to it.
    assert WindowPolicy.default().fingerprint == "e31c7385bebc37c1cd43dc1e2ce0bd3e"
    with_rules = WindowPolicy(intents=(IntentRule(name="deploy", patterns=("deploy",)),))
    assert with_rules.model_dump()["intents"] == ({"name": "deploy", "patterns": ("deploy",)},)
    assert WindowPolicy.model_validate_json(with_rules.model_dump_json()) == with_rules
    assert with_rules.fingerprint != WindowPolicy.default().fingerprint
