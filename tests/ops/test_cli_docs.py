"""``wakeful docs add|list|remove`` against the session's Postgres: versions, supersession,
one-line errors that store nothing (in-process, through typer's runner, from the project
folder), and the README's commands as typed, each a process the way a shell runs it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import Result

from tests.ops.cli_env import ROOT, run, shell
from wakeful.substrate.store import Store


@pytest.fixture
def folder(
    env: dict[str, str], store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A project folder with documents, and agent ``triage`` in the CLI's tenant; the
    test runs from it, as a user's shell would."""
    store.tenant(env["WAKEFUL_TENANT"]).upsert_agent(
        "triage", model="m", provider="anthropic", instructions="i", spec={}
    )
    root = tmp_path / "project"
    (root / "docs").mkdir(parents=True)
    (root / "notes").mkdir()
    (root / "runbook.md").write_text(
        "# Deploys\n\nHow we ship.\n\n## Key rotation\n\nThe deploy key rotates every Tuesday.\n",
        encoding="utf-8",
    )
    (root / "docs" / "vault.py").write_text("def rotate(key):\n    return key\n", "utf-8")
    (root / "notes" / "oncall.txt").write_text("Page the on-call engineer.\n", "utf-8")
    (root / "notes" / "faq.txt").write_text("Questions and answers.\n", "utf-8")
    monkeypatch.chdir(root)
    return root


def docs(env: dict[str, str], cwd: Path, *args: str) -> Result:
    assert Path.cwd() == cwd  # paths are resolved from the folder the command runs in
    return run(["docs", *args], env)


def ok_json(env: dict[str, str], cwd: Path, *args: str) -> Any:
    done = docs(env, cwd, *args, "--json")
    assert done.exit_code == 0, (done.exit_code, done.stdout, done.stderr)
    return json.loads(done.stdout)


def refused(done: Result, says: str) -> None:
    assert done.exit_code == 2, (done.exit_code, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert says in lines[0], lines[0]


def test_add_list_change_and_remove(env: dict[str, str], folder: Path, store: Store) -> None:
    added = ok_json(env, folder, "add", "triage", "runbook.md", "docs", "notes/*.txt")
    assert [(a["path"], a["outcome"]) for a in added] == [
        ("docs/vault.py", "added"),
        ("notes/faq.txt", "added"),
        ("notes/oncall.txt", "added"),
        ("runbook.md", "added"),
    ]
    listed = ok_json(env, folder, "list", "triage")
    assert {d["path"]: d["chunks"] for d in listed} == {
        "docs/vault.py": 1,
        "notes/faq.txt": 1,
        "notes/oncall.txt": 1,
        "runbook.md": 2,
    }
    again = docs(env, folder, "add", "triage", "runbook.md")
    assert again.exit_code == 0 and again.stdout.startswith("unchanged runbook.md"), again

    (folder / "runbook.md").write_text(
        "# Deploys\n\n## Key rotation\n\nThe deploy key rotates on the first Monday.\n", "utf-8"
    )
    changed = docs(env, folder, "add", "triage", "runbook.md")
    assert changed.exit_code == 0, changed.stderr
    said = r"replaced runbook\.md .* 1 chunk\(s\), 2 old chunk\(s\) superseded"
    assert re.match(said, changed.stdout), changed.stdout
    ts = store.tenant(env["WAKEFUL_TENANT"])
    live = [c.text for c in ts.doc_chunks("triage") if c.path == "runbook.md"]
    assert live == ["Deploys > Key rotation\n\nThe deploy key rotates on the first Monday."]

    removed = docs(env, folder, "remove", "triage", "notes/oncall.txt")
    assert removed.stdout.strip() == "removed notes/oncall.txt from triage (1 chunk(s))"
    # Another spelling of the same path finds it.
    assert docs(env, folder, "remove", "triage", "./notes/../notes/faq.txt").exit_code == 0
    assert [d["path"] for d in ok_json(env, folder, "list", "triage")] == [
        "docs/vault.py",
        "runbook.md",
    ]


def test_bad_input_is_one_line_exit_2_and_loses_nothing(env: dict[str, str], folder: Path) -> None:
    ok_json(env, folder, "add", "triage", "runbook.md")
    before = ok_json(env, folder, "list", "triage")
    (folder / "blob.bin").write_bytes(b"\x7fELF\x00\x01")
    (folder / "empty.md").write_text("", "utf-8")
    (folder / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    (folder / "runbook.md").write_text("# Deploys\n\nchanged\n", "utf-8")
    for args, says in (
        (["add", "triage", "runbook.md", "missing.md"], "no such file or folder: 'missing.md'"),
        (["add", "triage", "runbook.md", "blob.bin"], "blob.bin is a binary file"),
        (["add", "triage", "runbook.md", "empty.md"], "empty.md is empty"),
        (["add", "triage", "runbook.md", "latin.txt"], "latin.txt is not UTF-8 text"),
        (["add", "triage", "runbook.md", "*.rst"], "the glob '*.rst' matches no file"),
        (["add", "ghost", "runbook.md"], "no agent 'ghost'"),
        (["list", "ghost"], "no agent 'ghost'"),
        (["remove", "triage", "nope.md"], "agent 'triage' has no document 'nope.md'"),
    ):
        refused(docs(env, folder, *args), says)
    # The changed runbook.md rode with each bad file: none of it was stored.
    assert ok_json(env, folder, "list", "triage") == before


def test_odd_unicode_is_stored_as_written(env: dict[str, str], folder: Path, store: Store) -> None:
    name = "нотатки 📝.md"
    odd = "\ufeff# Ключ \u202eRTL\u202c\r\n\r\nzero\u200dwidth 𝔘\r\n"
    (folder / name).write_bytes(odd.encode())
    added = ok_json(env, folder, "add", "triage", name)
    assert added[0]["path"] == name and added[0]["chunks"] == 1
    (chunk,) = store.tenant(env["WAKEFUL_TENANT"]).doc_chunks("triage")
    assert chunk.heading == "Ключ \u202eRTL\u202c" and chunk.text.endswith("zero\u200dwidth 𝔘")
    assert docs(env, folder, "remove", "triage", name).exit_code == 0


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("### Documents") :]
    section = section[: section.index("\n### ", 1)]
    return re.findall(r"^    (wakeful docs .*)$", section, flags=re.M)


def test_the_readme_commands_run_as_typed(env: dict[str, str], folder: Path) -> None:
    commands = readme_commands()
    assert len(commands) == 5, commands
    outputs = []
    for command in commands:
        done = shell(command, env, cwd=folder)
        assert done.returncode == 0, (command, done.stdout, done.stderr)
        outputs.append(done.stdout)
    assert "added runbook.md" in outputs[0] and "added docs/vault.py" in outputs[0]
    assert outputs[2].startswith("unchanged runbook.md")
    assert outputs[3].strip() == "removed notes/oncall.txt from triage (1 chunk(s))"
    assert [d["path"] for d in json.loads(outputs[4])] == [
        "docs/vault.py",
        "notes/faq.txt",
        "runbook.md",
    ]
