"""``wakeful decisions list|add|supersede|retire``, run as a process the way a shell runs it,
against the session's Postgres: exit codes, JSON, and one-line errors."""

from __future__ import annotations

import json
import shlex
import subprocess
from typing import Any

import pytest

from tests.ops.cli_env import AGENTS, run, shell
from wakeful.substrate.store import Store


@pytest.fixture
def env(env: dict[str, str]) -> dict[str, str]:
    """The CLI's settings, with ``clerk`` created in their tenant."""
    assert run(["agent", "create", "--agents", AGENTS], env).exit_code == 0  # agent 'clerk'
    return env


def wakeful(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return shell("wakeful decisions " + shlex.join(args), env)


def ok_json(env: dict[str, str], *args: str) -> Any:
    done = wakeful(env, *args, "--json")
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    return json.loads(done.stdout)


def refused(done: subprocess.CompletedProcess[str], says: str) -> None:
    """Exit 2 (misuse) with one line on stderr naming what was wrong."""
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
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
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[0].startswith("P-2  key db.engine  person  since ")
    assert "expires never" in listed.stdout and "why: LTS" in listed.stdout
    assert "P-1" not in listed.stdout
    every = {d["decision_id"]: d for d in ok_json(env, "list", "clerk", "--all")}
    assert every["P-1"]["status"] == "superseded" and every["P-1"]["superseded_by"] == "P-2"
    third = ok_json(env, "supersede", "clerk", "P-2", "Use Postgres 17.")
    assert (third["decision_id"], third["key"], third["replaces"]) == ("P-3", "db.engine", ["P-2"])
    retired = wakeful(env, "retire", "clerk", "P-3")
    assert (retired.returncode, retired.stdout.strip()) == (0, "retired P-3 of clerk")
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
    assert wakeful(env, "add", "clerk", "k", "x").returncode == 0
    assert wakeful(env, "add", "clerk", "k", "y").returncode == 0
    refused(wakeful(env, "supersede", "clerk", "P-1", "z"), "already superseded by 'P-2'")
    assert wakeful(env, "retire", "clerk", "P-2").returncode == 0
    refused(wakeful(env, "retire", "clerk", "P-2"), "decision 'P-2' is already retired")


def test_list_is_oldest_first(env: dict[str, str], store: Store) -> None:
    ts = store.tenant(env["WAKEFUL_TENANT"])
    for n in range(11):
        ts.record_decision("clerk", key=f"k{n}", text=f"rule {n}")
    listed = run(["decisions", "list", "clerk", "--json"], env)
    assert listed.exit_code == 0, listed.output
    assert [d["decision_id"] for d in json.loads(listed.stdout)] == [f"P-{n}" for n in range(1, 12)]
