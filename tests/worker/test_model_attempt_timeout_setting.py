"""``WAKEFUL_MODEL_ATTEMPT_TIMEOUT_S``: how long one provider attempt may take to reply in full;
bounded by the model call's own timeout, which it must leave room in."""

from __future__ import annotations

import os

import pytest

from wakeful.activities.deps import ActivityDeps
from wakeful.agents import AgentRegistry
from wakeful.errors import ConfigError
from wakeful.substrate.store import Store
from wakeful.tokenizers import BpeCounter
from wakeful.worker.settings import load_settings
from wakeful.workflows.retries import MODEL_TIMEOUT


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("WAKEFUL_"):
            monkeypatch.delenv(name)


def test_the_default_leaves_room_in_the_model_calls_timeout() -> None:
    # The bound below (300 s) is MODEL_TIMEOUT's, written out where the CLI loads settings.
    assert MODEL_TIMEOUT.total_seconds() == 300
    assert load_settings().model_attempt_timeout_s == 240 < MODEL_TIMEOUT.total_seconds()


def test_a_value_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WAKEFUL_MODEL_ATTEMPT_TIMEOUT_S", "90")
    assert load_settings().model_attempt_timeout_s == 90


@pytest.mark.parametrize("value", ["0", "300", "soon"])
def test_a_value_outside_the_model_calls_timeout_is_one_line(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("WAKEFUL_MODEL_ATTEMPT_TIMEOUT_S", value)
    with pytest.raises(ConfigError) as caught:
        load_settings()
    message = str(caught.value)
    assert "\n" not in message
    assert f"WAKEFUL_MODEL_ATTEMPT_TIMEOUT_S={value!r}" in message


def _no_providers(name: str) -> object:
    raise AssertionError("no provider is built here")


@pytest.mark.parametrize("value", [0, -1.0, 300, True])
def test_activity_deps_refuse_a_deadline_past_the_calls_own(store: Store, value: float) -> None:
    with pytest.raises(ConfigError) as caught:
        ActivityDeps(
            store=store,
            agents=AgentRegistry([]),
            providers=_no_providers,  # type: ignore[arg-type]
            counter=BpeCounter(),
            model_attempt_timeout_s=value,
        )
    message = str(caught.value)
    assert "\n" not in message and "model_attempt_timeout_s" in message and "< 300" in message
