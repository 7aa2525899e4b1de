"""Intents for a goal that came without any, so that the policy's intent triggers can fire.

A trigger from the CLI, a webhook or a schedule may name its intents; most say only what
happened, in text. An :class:`IntentClassifier` reads that text and names the intents. The
one built in, :class:`RulesClassifier`, is deterministic — the policy's ``[[intents]]``
rules, whole words or phrases matched case-insensitively — so a recompile of a past call
classifies its goal the same way (the classified goal is what the compile record keeps).
The protocol is open for other classifiers: ``WAKEFUL_INTENT_CLASSIFIER=model`` (read by
:func:`parse_classifier_setting`) has a model pick among the rules' intents
(``wakeful.activities.intent_model``), with the rules behind it when the call fails.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Protocol

from wakeful.compiler.blocks import Goal
from wakeful.compiler.policy import IntentRule, WindowPolicy

__all__ = [
    "Classified",
    "IntentClassifier",
    "ModelChoice",
    "RulesClassifier",
    "classify_goal",
    "parse_classifier_setting",
]


class IntentClassifier(Protocol):
    """Names the intents of a goal's text (none: an empty tuple)."""

    @property
    def name(self) -> str:
        """What classified, as the ledger records it (e.g. ``rules``)."""
        ...

    def classify(self, text: str) -> tuple[str, ...]: ...


def _pattern(phrase: str) -> re.Pattern[str]:
    # Whole words: "deploy" matches "Deploy 812 failed" but not "redeployment"; the
    # phrase's own spacing is relaxed to any run of whitespace.
    words = [re.escape(w) for w in phrase.split()]
    return re.compile(r"(?<!\w)" + r"\s+".join(words) + r"(?!\w)", re.IGNORECASE)


@dataclass(frozen=True)
class RulesClassifier:
    """The policy's ``[[intents]]`` rules: an intent for every rule with a pattern in the
    text, in the rules' order."""

    rules: tuple[IntentRule, ...]
    name: str = "rules"
    _compiled: tuple[tuple[str, tuple[re.Pattern[str], ...]], ...] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        compiled = tuple((r.name, tuple(_pattern(p) for p in r.patterns)) for r in self.rules)
        object.__setattr__(self, "_compiled", compiled)

    def classify(self, text: str) -> tuple[str, ...]:
        return tuple(
            intent for intent, patterns in self._compiled if any(p.search(text) for p in patterns)
        )


@dataclass(frozen=True)
class Classified:
    """A goal after classification, and what the ledger says about it."""

    goal: Goal
    classifier: str
    intents: tuple[str, ...]

    def note(self) -> str:
        found = ", ".join(self.intents) if self.intents else "none"
        return f"{found} (by {self.classifier})"


def classify_goal(
    goal: Goal, policy: WindowPolicy, classifier: IntentClassifier | None = None
) -> Classified | None:
    """The goal with the intents ``classifier`` (default: the policy's rules) finds in its
    text; None when the goal brought intents of its own, or there is nothing to classify by."""
    if goal.intents:
        return None
    if classifier is None:
        if not policy.intents:
            return None
        classifier = RulesClassifier(policy.intents)
    intents = tuple(dict.fromkeys(classifier.classify(goal.text)))
    updated = goal.model_copy(update={"intents": intents}) if intents else goal
    return Classified(updated, classifier.name, intents)


@dataclass(frozen=True)
class ModelChoice:
    """``WAKEFUL_INTENT_CLASSIFIER=model[:<provider>:<model>]``: which model classifies
    (None, None: each agent's own provider and model)."""

    provider: str | None = None
    model: str | None = None

    @property
    def label(self) -> str:
        return "model" if self.provider is None else f"model:{self.provider}:{self.model}"


def parse_classifier_setting(value: str) -> ModelChoice | None:
    """``rules`` (or empty): None; ``model`` or ``model:<provider>:<model>``: the
    :class:`ModelChoice`. Anything else raises ValueError saying what is accepted."""
    from wakeful.compiler.render import PROVIDER_ALIASES, RENDERERS

    text = value.strip()
    if text in ("", "rules"):
        return None
    if text == "model":
        return ModelChoice()
    kind, _, rest = text.partition(":")
    provider, _, model = rest.partition(":")
    if kind == "model" and provider and model.strip():
        known = (*RENDERERS, *PROVIDER_ALIASES)
        if provider not in known:
            raise ValueError(f"unknown provider {provider!r}; choose one of {', '.join(known)}")
        return ModelChoice(PROVIDER_ALIASES.get(provider, provider), model.strip())
    raise ValueError(
        "use 'rules', 'model' (each agent's own model) or 'model:<provider>:<model>'"
        " (e.g. model:anthropic:claude-haiku-4-5)"
    )
