"""``WAKEFUL_INTENT_CLASSIFIER_TIMEOUT_S``: how long a model classification may take before
the rules classify instead; bounded by the compile activity it runs in."""

from __future__ import annotations

import os

import pytest

from wakeful.activities.intent_setting import TIMEOUT_S
from wakeful.errors import ConfigError
from wakeful.worker.settings import load_settings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("WAKEFUL_"):
            monkeypatch.delenv(name)


def test_the_default_is_the_classifiers_own() -> None:
    assert load_settings().intent_classifier_timeout_s == TIMEOUT_S


def test_a_value_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WAKEFUL_INTENT_CLASSIFIER_TIMEOUT_S", "7.5")
    assert load_settings().intent_classifier_timeout_s == 7.5


@pytest.mark.parametrize("value", ["0", "41", "soon"])
def test_a_value_outside_the_compiles_timeout_is_one_line(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("WAKEFUL_INTENT_CLASSIFIER_TIMEOUT_S", value)
    with pytest.raises(ConfigError) as caught:
        load_settings()
    message = str(caught.value)
    assert "\n" not in message
    assert f"WAKEFUL_INTENT_CLASSIFIER_TIMEOUT_S={value!r}" in message
