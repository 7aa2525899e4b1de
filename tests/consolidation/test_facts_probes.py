"""Facts keyed by subject, and the probe questions built from them."""

from __future__ import annotations

import pytest

from tests.consolidation.helpers import turn
from wakeful.consolidation.facts import extract_facts, fact_key, latest_facts, parse_fact
from wakeful.consolidation.probes import answers, probes_for


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("FYI, the staging database port is 5433.", ("staging database port", "5433")),
        ("Correction: the staging database port is now 6543.", ("staging database port", "6543")),
        ("The scheduler owner is @mira.", ("scheduler owner", "@mira")),
        ("Set the gateway timeout to 30s.", ("gateway timeout", "30s")),
        ("queue version: v2.4.1-rc2", ("queue version", "v2.4.1-rc2")),
    ],
)
def test_fact_shapes(sentence: str, expected: tuple[str, str]) -> None:
    assert parse_fact(sentence) == expected


@pytest.mark.parametrize(
    "sentence",
    [
        "The cache is warm now.",
        "The staging database port is not 5433.",
        "Is the staging database port 5433?",
        "Decision: DEC-4 approved",
        "I looked at the dashboards and the queue drains steadily after the morning peak.",
    ],
)
def test_not_facts(sentence: str) -> None:
    assert parse_fact(sentence) is None


def test_later_statements_win_per_key() -> None:
    items = [
        turn(1, "FYI, the staging database port is 5433."),
        turn(2, "Correction: the Staging Database port is now 6543."),
    ]
    facts = extract_facts(items)
    assert [f.key for f in facts] == ["staging database port"] * 2
    assert latest_facts(facts)["staging database port"].value == "6543"
    assert fact_key("the  Staging DB port") == "staging db port"


def test_probes_ask_for_the_latest_value_and_the_permitted_actor() -> None:
    items = [
        turn(1, "FYI, the staging database port is 5433."),
        turn(2, "Correction: the staging database port is now 6543."),
        turn(3, "Only the release manager may merge to the main branch."),
    ]
    probes = probes_for(items, extract_facts(items))
    assert [(p.question, p.answer) for p in probes] == [
        ("What is the staging database port?", "6543"),
        ("Who may merge to the main branch?", "manager"),
    ]
    good = (
        "- staging database port is now 6543\n"
        "- Only the release manager may merge to the main branch."
    )
    assert all(answers(good, p) for p in probes)
    # The answer must sit beside the subject, and a longer token is not the answer.
    assert not answers("- staging port 6543. The database is fine.", probes[0])
    assert not answers("- staging database port is 65430", probes[0])
