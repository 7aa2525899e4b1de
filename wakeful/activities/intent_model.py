"""Intents named by a model, through the worker's own providers, with the rules behind it.

``WAKEFUL_INTENT_CLASSIFIER=model`` (the agent's own provider and model) or
``model:<provider>:<model>`` (a small one, say) makes the compile activity ask a model
which of the policy's ``[[intents]]`` a goal without intents has: one call, the intents'
names with their patterns as hints, answered with a JSON list of names. Names the policy
does not have are dropped. A provider error, a timeout or an answer that is not a JSON list
falls back to the policy's rules, and the ledger says so (``by rules (model failed: ...)``).

The choice is logged once per wake (as the handoff note's is, with what it cost): the
wake's later compiles, and a retried compile, read it back instead of asking the model
again; the compile that asked reports the cost (``CompileOut.intents_cost_usd``), which
the wake adds to its spend; a recompile reads the classified goal from the compile record.
The compile activity runs in a thread; the provider clients belong to the worker's event
loop, so the call is scheduled there (``run_coroutine_threadsafe``) and the activity's
thread waits for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wakeful.activities.intent_setting import IntentModel
from wakeful.compiler.intents import IntentClassifier, RulesClassifier
from wakeful.compiler.policy import IntentRule, WindowPolicy
from wakeful.consolidation.prompt import json_in_answer, request_body
from wakeful.errors import ProviderError, UserError
from wakeful.providers.base import ModelReply
from wakeful.providers.pricing import cost_usd
from wakeful.substrate.records import ConsolidationLogRecord

if TYPE_CHECKING:
    from wakeful.activities.deps import ActivityDeps
    from wakeful.agents import Agent
    from wakeful.substrate.store import TenantStore

__all__ = [
    "ACTION",
    "HEADER",
    "build_prompt",
    "classify_cost",
    "intent_classifier",
    "intent_request",
    "parse_intents",
]

HEADER = "# Classify goal intents"
ACTION = "intent_classification"
SYSTEM = (
    "You route an autonomous agent's goals: you name which of a fixed list of intents a "
    "goal asks for, and nothing else."
)
MAX_TOKENS = 200


def build_prompt(rules: Sequence[IntentRule], text: str) -> str:
    """The user message: the policy's intents (patterns as hints) and the goal."""
    lines = [
        HEADER,
        "Pick the intents below that the goal asks for. Answer with one JSON list of their",
        'names and nothing else, e.g. ["deploy"]; answer [] when none applies.',
        "",
        "## Intents",
        *(f"- {r.name}: {'; '.join(r.patterns)}" for r in rules),
        "",
        "## Goal",
        text.strip(),
    ]
    return "\n".join(lines)


def intent_request(provider: str, model: str, prompt: str) -> dict[str, Any]:
    """The request body, shaped like the handoff note's (a plain text answer: every
    renderer has one, where a forced tool call differs by API)."""
    return request_body(provider, model, prompt, MAX_TOKENS, system=SYSTEM)


def parse_intents(text: str, known: Sequence[str]) -> tuple[str, ...] | str:
    """The policy's intents among a model's answer (in the policy's order), or why the
    answer has none to read (one line). Names the policy lacks are dropped."""
    data = json_in_answer(text, list)
    if isinstance(data, str):
        return data
    named = {str(v).strip().lower() for v in data if isinstance(v, str | int | float)}
    return tuple(name for name in known if name.lower() in named)


@dataclass
class ModelClassifier:
    """One compile's classifier: asks the model once, keeps what it found (``name`` is
    what the ledger records; ``cost_usd`` what the call cost)."""

    deps: ActivityDeps
    setting: IntentModel
    ts: TenantStore
    agent: Agent
    rules: tuple[IntentRule, ...]
    step: str  # the wake's: one classification per wake
    caller: str  # the compile's step key: it alone reports the call's cost
    name: str = "model"
    cost_usd: float = 0.0

    def classify(self, text: str) -> tuple[str, ...]:
        logged = self.ts.logged(self.step)
        if logged is not None:  # a later compile of the wake, or a retry: no second call
            self.name = str(logged.detail.get("classifier", logged.status))
            if logged.detail.get("compile") == self.caller:  # a retry: its cost is unreported
                self.cost_usd = float(logged.detail.get("cost_usd", 0.0))
            return tuple(str(i) for i in logged.detail.get("intents", ()))
        provider = self.setting.choice.provider or self.agent.provider
        model = self.setting.choice.model or self.agent.model
        detail: dict[str, Any] = {"model": model, "provider": provider, "compile": self.caller}
        answer = self._ask(provider, model, text, detail)
        if isinstance(answer, str):
            intents = RulesClassifier(self.rules).classify(text)
            self.name = f"rules (model failed: {answer})"
            status = "rules"
        else:
            intents, status = answer, "model"
            self.name = f"model:{provider}:{model}"
        self.cost_usd = float(detail.get("cost_usd", 0.0))
        detail |= {"classifier": self.name, "intents": list(intents)}
        self.ts.log_consolidation(
            ConsolidationLogRecord(
                agent=self.agent.name,
                step_key=self.step,
                round_id=self.step,
                action=ACTION,
                status=status,
                subject=text[:200],
                detail=detail,
            )
        )
        return intents

    def _ask(
        self, provider: str, model: str, text: str, detail: dict[str, Any]
    ) -> tuple[str, ...] | str:
        """The model's intents, or why there are none (one line); fills ``detail``."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:  # waiting here would block the loop the call has to run on
            return "classify was called on an event loop; run it in a thread"
        timeout = self.setting.timeout_s
        future = None
        prompt = build_prompt(self.rules, text)

        async def ask() -> ModelReply:
            # On the loop: the provider cache and its clients are the loop's, not this
            # thread's (an SDK client's connection pool is bound to the loop it runs on).
            client = self.deps.providers(provider)
            request = intent_request(client.name, model, prompt)
            return await asyncio.wait_for(client.complete(request), timeout)

        try:
            future = asyncio.run_coroutine_threadsafe(ask(), self.setting.loop)
            reply = future.result(timeout + 5.0)  # the loop's own timeout fires first
            detail["usage"] = reply.usage.model_dump()
            detail["cost_usd"] = cost_usd(reply.provider, reply.model, reply.usage)
        except (TimeoutError, FutureTimeout):
            if future is not None:
                future.cancel()
            return f"no answer within {timeout:g}s"
        except (ProviderError, UserError, ValueError, RuntimeError) as exc:
            return " ".join((str(exc) or type(exc).__name__).split())[:300]
        parsed = parse_intents(reply.text, [r.name for r in self.rules])
        if isinstance(parsed, str):
            detail["answer"] = reply.text[:500]
        return parsed


def intent_classifier(
    deps: ActivityDeps,
    ts: TenantStore,
    agent: Agent,
    policy: WindowPolicy,
    *,
    wake_key: str,
    compile_key: str,
) -> IntentClassifier | None:
    """The classifier a compile uses: the worker's (``deps.intent_classifier``), a model's
    bound to this wake and compile, or None (the policy's rules, if it has any)."""
    chosen = deps.intent_classifier
    if not isinstance(chosen, IntentModel):
        return chosen
    if not policy.intents:  # nothing to choose from: no call
        return None
    return ModelClassifier(deps, chosen, ts, agent, policy.intents, wake_key, compile_key)


def classify_cost(classifier: IntentClassifier | None) -> float:
    """What ``classifier``'s model call cost this compile (0: none made by it)."""
    return classifier.cost_usd if isinstance(classifier, ModelClassifier) else 0.0
