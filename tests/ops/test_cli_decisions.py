"""``wakeful decisions list|add|supersede|retire`` against the session's Postgres: exit codes,
JSON, and one-line errors. The commands run in-process (typer's runner); one refusal runs
as a process the way a shell runs it, for the real exit status and stderr."""

from __future__ import annotations

import json
import shlex
import subprocess
from typing import Any

import pytest
from typer.testing import Result

from tests.ops.cli_env import AGENTS, run, shell
from wakeful.substrate.store import Store


@pytest.fixture
def env(env: dict[str, str]) -> dict[str, str]:
    """The CLI's settings, with ``clerk`` created in their tenant."""
    assert run(["agent", "create", "--agents", AGENTS], env).exit_code == 0  # agent 'clerk'
    return env


def wakeful(env: dict[str, str], *args: str) -> Result:
    return run(["decisions", *args], env)


def ok_json(env: dict[str, str], *args: str) -> Any:
    done = wakeful(env, *args, "--json")
    assert done.exit_code == 0, (done.exit_code, done.stdout, done.stderr)
    return json.loads(done.stdout)


def refused(done: Result | subprocess.CompletedProcess[str], says: str) -> None:
    """Exit 2 (misuse) with one line on stderr naming what was wrong."""
    code = done.exit_code if isinstance(done, Result) else done.returncode
    assert code == 2, (code, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert says in lines[0], lines[0]


def test_add_supersede_retire_and_list(env: dict[str, str]) -> None:
    assert ok_json(env, "list", "clerk") == []
    first = ok_json(env, "add", "clerk", "db.engine", "Use Postgres 15.")
    assert (first["decision_id"], first["source"], first["replaces"]) == ("P-1", "person", [])
    second = ok_json(env, "add", "clerk", "db.engine", "Use Postgres 16.", "--rationale", "LTS")
    assert (second["decision_id"], second["replaces"]) == ("P-2", ["P-1"])
    listed = wakeful(env, "list", "clerk")
    assert listed.exit_code == 0, listed.stderr
    assert listed.stdout.splitlines()[0].startswith("P-2  key db.engine  person  since ")
    assert "expires never" in listed.stdout and "why: LTS" in listed.stdout
    assert "P-1" not in listed.stdout
    every = {d["decision_id"]: d for d in ok_json(env, "list", "clerk", "--all")}
    assert every["P-1"]["status"] == "superseded" and every["P-1"]["superseded_by"] == "P-2"
    third = ok_json(env, "supersede", "clerk", "P-2", "Use Postgres 17.")
    assert (third["decision_id"], third["key"], third["replaces"]) == ("P-3", "db.engine", ["P-2"])
    retired = wakeful(env, "retire", "clerk", "P-3")
    assert (retired.exit_code, retired.stdout.strip()) == (0, "retired P-3 of clerk")
    assert ok_json(env, "list", "clerk") == []
    statuses = {d["decision_id"]: d["status"] for d in ok_json(env, "list", "clerk", "--all")}
    assert statuses == {"P-1": "superseded", "P-2": "superseded", "P-3": "retired"}
    dated = ok_json(env, "add", "clerk", "freeze", "Freeze merges.", "--expires", "2999-01-01")
    assert dated["expires"].startswith("2999-01-01") and dated["status"] == "live"


def test_bad_input_is_one_line_and_exit_2(env: dict[str, str]) -> None:
    for args in (
        ["list", "ghost"],
        ["add", "ghost", "k", "x"],
        ["supersede", "ghost", "P-1", "x"],
        ["retire", "ghost", "P-1"],
    ):
        refused(wakeful(env, *args), "no agent 'ghost'")
    refused(wakeful(env, "retire", "clerk", "P-9"), "agent 'clerk' has no decision 'P-9'")
    refused(wakeful(env, "supersede", "clerk", "P-9", "x"), "has no decision 'P-9'")
    refused(wakeful(env, "add", "clerk", "db engine", "x"), "decision key 'db engine' is not valid")
    refused(wakeful(env, "add", "clerk", "k", "  "), "text must be a non-empty string")
    refused(wakeful(env, "add", "clerk", "k", "x", "--expires", "2000-01-01"), "in the past")
    refused(wakeful(env, "add", "clerk", "k", "x", "--expires", "soon"), "not an ISO date")
    assert wakeful(env, "add", "clerk", "k", "x").exit_code == 0
    assert wakeful(env, "add", "clerk", "k", "y").exit_code == 0
    refused(wakeful(env, "supersede", "clerk", "P-1", "z"), "already superseded by 'P-2'")
    assert wakeful(env, "retire", "clerk", "P-2").exit_code == 0
    refused(wakeful(env, "retire", "clerk", "P-2"), "decision 'P-2' is already retired")


def test_a_refusal_in_a_shell_is_exit_2_and_one_line(env: dict[str, str]) -> None:
    refused(shell("wakeful decisions " + shlex.join(["list", "ghost"]), env), "no agent 'ghost'")


def test_list_is_oldest_first(env: dict[str, str], store: Store) -> None:
    ts = store.tenant(env["WAKEFUL_TENANT"])
    for n in range(11):
        ts.record_decision("clerk", key=f"k{n}", text=f"rule {n}")
    listed = run(["decisions", "list", "clerk", "--json"], env)
    assert listed.exit_code == 0, listed.output
    assert [d["decision_id"] for d in json.loads(listed.stdout)] == [f"P-{n}" for n in range(1, 12)]


def test_what_the_store_refuses_is_one_short_line(env: dict[str, str]) -> None:
    """The CLI's checks are the store's (``wakeful.decisions.check_decision``): a key of
    HTML or of 5,000 characters, a text of 100,000, are one short line each and exit 2."""
    for args, says in (
        (["add", "clerk", "<script>x</script>", "x"], "decision key '<script>x</script>'"),
        (["add", "clerk", "k" * 5000, "x"], "(5,000 characters) is not valid"),
        (["add", "clerk", "k", "y" * 100_000], "has 100,000 characters; keep it under 2,000"),
        (["add", "clerk", "k", "x", "--rationale", "z" * 3000], "rationale has 3,000"),
    ):
        done = wakeful(env, *args)
        refused(done, says)
        assert len(done.stderr) < 300, done.stderr[:400]
    added = ok_json(env, "add", "clerk", "k", "x")
    refused(wakeful(env, "supersede", "clerk", added["decision_id"], "y" * 100_000), "100,000")
    assert [d["decision_id"] for d in ok_json(env, "list", "clerk", "--all")] == ["P-1"]


def test_a_proposal_is_listed_and_a_person_accepts_or_declines_it(
    env: dict[str, str], store: Store
) -> None:
    """What the model records on a person's key is listed as a proposal; the person's
    decision stays live until the person accepts one (or retires it: declined)."""
    person = ok_json(env, "add", "clerk", "db.engine", "Use Postgres 18.")
    ts = store.tenant(env["WAKEFUL_TENANT"])
    ts.record_decision(
        "clerk", key="db.engine", text="Use Postgres 17.", source="tool", decision_id="DEC-5"
    )
    listed = {d["decision_id"]: d for d in ok_json(env, "list", "clerk")}
    assert listed["P-1"]["status"] == "live"
    assert (listed["DEC-5"]["status"], listed["DEC-5"]["proposal_for"]) == ("proposed", "P-1")
    text = wakeful(env, "list", "clerk").stdout
    assert "[proposed over P-1: accept or retire it]" in text
    refused(wakeful(env, "supersede", "clerk", "DEC-5", "x"), "'DEC-5' is a proposal over 'P-1'")
    refused(wakeful(env, "accept", "clerk", person["decision_id"]), "live, not a proposal")
    accepted = ok_json(env, "accept", "clerk", "DEC-5")
    assert (accepted["decision_id"], accepted["source"], accepted["text"]) == (
        "P-2",
        "person",
        "Use Postgres 17.",
    )
    assert sorted(accepted["replaces"]) == ["DEC-5", "P-1"]
    ts.record_decision(
        "clerk", key="db.engine", text="Use Postgres 16.", source="tool", decision_id="DEC-6"
    )
    assert wakeful(env, "retire", "clerk", "DEC-6").exit_code == 0  # declined
    assert [d["decision_id"] for d in ok_json(env, "list", "clerk")] == ["P-2"]
