"""The redaction policy table: each rule catches its secret, leaves ordinary text alone, and
the table itself is validated with errors that name the rule."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from wakeful.errors import ConfigError
from wakeful.redaction import RedactionPolicy, RedactionRule, default_policy

# Fake but well-formed secrets, one per rule (built by concatenation so no scanner flags
# this file as leaking them).
PLANTED = {
    "anthropic_api_key": "sk-ant-" + "api03-" + "Q" * 40,
    "openai_api_key": "sk-" + "proj-" + "Z9" * 20,
    "github_token": "ghp_" + "a1B2" * 9,
    "aws_access_key_id": "AKIA" + "IOSFODNN7EXAMPLE",
    "slack_token": "xoxb-" + "1234567890-abcdefghij",
    "stripe_key": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "google_api_key": "AIza" + "SyD-" + "x" * 31,
    "jwt": "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0." + "dozjgNryP4J3jVmNHl0w5N",
}
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAx7Qn0hLb5r0XkRS0\n"
    "a2V5bWF0ZXJpYWw=\n"
    "-----END RSA PRIVATE KEY-----"
)


@pytest.mark.parametrize(("rule", "secret"), sorted(PLANTED.items()))
def test_each_rule_redacts_its_secret(rule: str, secret: str) -> None:
    out = default_policy().redact(f"config:\n  value {secret} end\n")
    assert secret not in out.text
    assert f"[REDACTED:{rule}]" in out.text
    assert out.counts == {rule: 1}


@pytest.mark.parametrize(
    ("text", "kept", "gone"),
    [
        (f"prefix\n{PEM}\nsuffix", "suffix", "MIIEowIBAAKCAQEA"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE\n[truncated]", "", "b3Blbn"),
        ("Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345", "Bearer", "abcdefghijklmnop"),
        ("Authorization: Basic dXNlcjpodW50ZXIy", "Basic", "dXNlcjpodW50ZXIy"),
        ("postgres://app:hunter2hunter2@db:5432/x", "postgres://app:", "hunter2hunter2"),
        ("DB_PASSWORD=correct-horse-battery", "DB_PASSWORD=", "correct-horse-battery"),
        ('{"client_secret": "abcd1234efgh"}', '"client_secret": "', "abcd1234efgh"),
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_", "wJalr"),
    ],
)
def test_structured_secrets_keep_their_context(text: str, kept: str, gone: str) -> None:
    out = default_policy().redact(text).text
    assert gone not in out
    assert kept in out
    assert "[REDACTED:" in out


@pytest.mark.parametrize(
    "text",
    [
        "password = read_password()",
        "secret = settings.db_secret()",
        "max_tokens: 4096 and the token budget",
        "def api_key(self) -> str:",
        "see https://example.com/docs and sk-short",
        "commit 3f2a9c1 by alice@example.com",  # emails stay unless the policy says otherwise
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    out = default_policy().redact(text)
    assert (out.text, dict(out.counts)) == (text, {})


def test_email_redaction_is_a_policy_switch() -> None:
    text = "ping alice@example.com about it"
    assert default_policy().redact(text).text == text
    strict = default_policy().with_enabled(email=True)
    assert strict.redact(text).text == "ping [REDACTED:email] about it"


def test_redaction_is_idempotent() -> None:
    text = "\n".join([*PLANTED.values(), PEM, "DB_PASSWORD=abcdefghij", "x://u:pw123456@h"])
    once = default_policy().redact(text).text
    twice = default_policy().redact(once)
    assert twice.text == once and not twice.changed


@pytest.mark.parametrize(
    "hostile",
    ["a." * 100_000, "a-" * 100_000, "-----BEGIN PRIVATE KEY-----" * 5000, "x@" * 100_000],
)
def test_hostile_tool_output_is_redacted_in_linear_time(hostile: str) -> None:
    """Regression guard for catastrophic backtracking: quadratic rules would hang here."""
    default_policy().with_enabled(email=True).redact(hostile)


def test_a_policy_table_loads_from_toml(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(
        '[[rule]]\nname = "ticket"\npattern = "TCK-[0-9]+"\nreplacement = "[ticket]"\n'
        '[[rule]]\nname = "off"\npattern = "x"\nreplacement = "y"\nenabled = false\n'
    )
    policy = RedactionPolicy.load(path)
    assert policy.redact("see TCK-123, x").text == "see [ticket], x"


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"name": "a", "pattern": "(", "replacement": ""}], "rule 'a': bad pattern"),
        ([{"name": "a", "pattern": "x*", "replacement": ""}], "matches the empty string"),
        ([{"name": "a", "pattern": "x", "replacement": r"\2"}], "bad replacement"),
        ([{"name": "A b", "pattern": "x", "replacement": ""}], "lower_snake_case"),
        ([{"name": "a", "pattern": "x"}], "missing keys ['replacement']"),
        ([{"name": "a", "pattern": "x", "replacement": "", "on": True}], "unknown keys ['on']"),
        ([{"name": "a", "pattern": "x", "replacement": ""}] * 2, "more than once: a"),
    ],
)
def test_a_bad_policy_table_names_the_rule(rows: list[dict[str, object]], message: str) -> None:
    with pytest.raises(ConfigError, match=r".*") as err:
        RedactionPolicy.from_rows(rows)
    assert message in str(err.value)


def test_switching_an_unknown_rule_is_an_error() -> None:
    with pytest.raises(ConfigError, match="no redaction rule named emails"):
        default_policy().with_enabled(emails=True)


def test_rules_are_plain_values() -> None:
    rule = RedactionRule("x_rule", "x", "y")
    assert rule == RedactionRule("x_rule", "x", "y") and rule.regex.pattern == "x"


def _without_prefilter(policy: RedactionPolicy) -> RedactionPolicy:
    return RedactionPolicy(tuple(replace(r, requires=()) for r in policy.rules))


@pytest.mark.parametrize(
    "text",
    [
        *PLANTED.values(),
        *(v.lower() for v in PLANTED.values()),
        PEM,
        PEM.lower(),
        "Authorization: BEARER abcdefghijklmnopqrstuvwxyz012345",
        "AUTHORIZATION: basic dXNlcjpodW50ZXIy",
        "DB_PASSWORD=correct-horse-battery and Api_Key: 'abcd1234efgh'",
        "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        # Letters outside ASCII that `re` matches to ASCII ones ignoring case.
        "pa\u017fsword=correct-horse-battery",
        "PR\u0130VATE_KEY=correct-horse-battery",
        "api_\u212aey: 'abcd1234efgh'",
        "\u0131nvalid token ab\u017f \u2014 nothing secret here",
        "HTTPS://user:pw123456@host/x",
        "ping alice@example.com about it",
        "max_tokens: 4096 and the token budget",
    ],
)
def test_the_prefilter_never_changes_what_is_redacted(text: str) -> None:
    """``requires`` only skips scans that could not match: every rule of the shipped table,
    email included, redacts the same with and without it."""
    policy = default_policy().with_enabled(email=True)
    assert policy.redact(text) == _without_prefilter(policy).redact(text)


def test_a_rule_whose_literals_are_absent_is_not_scanned() -> None:
    rule = RedactionRule("ticket", "TCK-[0-9]+", "[ticket]", requires=("TCK-",))
    assert rule.requires == ("tck-",)
    assert not rule.may_match("no tickets here") and rule.may_match("see tck-1")
    policy = RedactionPolicy((rule,))
    assert policy.redact("see TCK-123").text == "see [ticket]"


@pytest.mark.parametrize("requires", [[""], "TCK-", [3]])
def test_requires_must_list_literals(requires: object) -> None:
    rows = [{"name": "a", "pattern": "x", "replacement": "", "requires": requires}]
    with pytest.raises(ConfigError, match="rule 'a': requires must be a list"):
        RedactionPolicy.from_rows(rows)
