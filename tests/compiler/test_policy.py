from __future__ import annotations

from pathlib import Path

import pytest

import wakeful.compiler as compiler
from wakeful.compiler import WindowPolicy, load_policy, load_policy_file
from wakeful.errors import PolicyError

DEFAULT_FILE = Path(compiler.__file__).parent / "default_policy.toml"


def test_default_file_matches_default_policy() -> None:
    assert load_policy(DEFAULT_FILE.read_text()) == WindowPolicy.default()


def test_yaml_and_toml_give_the_same_policy() -> None:
    toml = "version = 1\n[budget]\ncontext_limit = 50000\n[staleness]\nmode = 'flag'\n"
    yaml = "version: 1\nbudget:\n  context_limit: 50000\nstaleness:\n  mode: flag\n"
    assert load_policy(toml) == load_policy(yaml, "yaml") == load_policy_file(yaml, "p.yml")
    assert load_policy(yaml, fmt="yml") == load_policy(toml, fmt="toml")
    assert load_policy(toml).budget.context_limit == 50_000


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("[budget.allocations]\nevidence = 1.5\n", "budget.allocations.evidence"),
        ("[budget.allocations]\nevidence = 0.9\nrecent = 0.9\n", "budget.allocations"),
        ("[budget]\ncontext_limit = 100\noutput_reserve = 100\n", "budget"),
        ("[ranking]\nhalf_life_events = 0\n", "ranking.half_life_events"),
        ("[cache]\nstable_ttl = '5m'\nsemi_stable_ttl = '1h'\n", "cache"),
        ("[[triggers]]\nname = 'x'\n", "triggers[0]"),
        ("[budget]\ncontext_limt = 5\n", "budget.context_limt"),
        ("version = 2\n", "<policy>"),
    ],
)
def test_invalid_policy_names_the_field(text: str, path: str) -> None:
    with pytest.raises(PolicyError) as err:
        load_policy(text)
    assert f"{path}:" in str(err.value)


def test_duplicate_trigger_names_are_rejected() -> None:
    text = "[[triggers]]\nname='a'\nintents=['x']\n[[triggers]]\nname='a'\nintents=['y']\n"
    with pytest.raises(PolicyError, match="unique: a"):
        load_policy(text)


def test_garbage_is_a_policy_error() -> None:
    with pytest.raises(PolicyError, match="neither valid TOML"):
        load_policy("= = =\n  - :")


def test_fingerprint_tracks_content() -> None:
    a = WindowPolicy.default()
    b = load_policy("[ranking]\nfloor = 0.1\n")
    assert a.fingerprint == WindowPolicy.default().fingerprint != b.fingerprint
