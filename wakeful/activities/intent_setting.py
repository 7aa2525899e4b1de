"""What ``WAKEFUL_INTENT_CLASSIFIER=model...`` gives the worker: the model chosen and the
event loop its provider clients live on. Data only, so the activities' dependencies
(:mod:`wakeful.activities.deps`) can hold it without importing the classifier, which
imports them (:mod:`wakeful.activities.intent_model`)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from wakeful.compiler.intents import ModelChoice

__all__ = ["TIMEOUT_S", "IntentModel"]

TIMEOUT_S = 20.0  # well inside the compile's start-to-close timeout


@dataclass(frozen=True)
class IntentModel:
    """The worker's model classification: the ``choice`` the setting made, and the
    worker's event loop, where the provider clients live."""

    choice: ModelChoice
    loop: asyncio.AbstractEventLoop = field(repr=False, compare=False)
    timeout_s: float = TIMEOUT_S
