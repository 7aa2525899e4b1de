"""The work directory's state as a layer of the window: a change between two wakes of one
session (a commit, an edited file) is in the second wake's window, and a replay gives the
bytes the compile saw."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from dataclasses import replace
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message, running_worker
from wakeful.agents import Agent, AgentRegistry
from wakeful.replay import recompile
from wakeful.substrate.sources import ContextSource
from wakeful.substrate.store import Store
from wakeful.substrate.workdir import WorkdirState
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake


def git(repo: Path, *args: str) -> None:
    env = os.environ | {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    subprocess.run(["git", "-C", str(repo), *args], check=True, env=env, capture_output=True)


def test_the_text_names_branch_status_commits_and_files(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    assert WorkdirState(str(repo)).text() == f"Work directory {repo}:\nnot a git repository"
    git(repo, "init", "-q", "-b", "main")
    (repo / "deploy.yaml").write_text("replicas: 3\n", encoding="utf-8")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "Deploy with three replicas")
    state = WorkdirState(str(repo), files=["deploy.yaml", "gone.txt"])
    assert isinstance(state, ContextSource)
    lines = state.text().splitlines()
    assert lines[1:3] == ["branch: main", "status: clean"]
    assert lines[3] == "recent commits:" and lines[4].endswith(" Deploy with three replicas")
    assert lines[5].startswith("file deploy.yaml: modified ") and lines[5].endswith(", 12 bytes")
    assert lines[6] == "file gone.txt: missing"
    assert state.text() == state.text()  # nothing of the clock: the same bytes while unchanged


async def test_a_change_between_two_wakes_of_a_session_is_seen_by_the_second(
    store: Store,
    agent: Agent,
    temporal_dev: WorkflowEnvironment,
    sim: SimulatorServer,
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "deploy.yaml").write_text("replicas: 3\n", encoding="utf-8")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "Deploy with three replicas")
    a = replace(agent, context_sources=(WorkdirState(str(repo), files=["deploy.yaml"]),))
    ts = store.tenant(a.tenant)

    client = temporal_dev.client
    async with running_worker(client, store, AgentRegistry([a]), sim, uuid.uuid4().hex) as q:
        first = await wake(client, a.runtime(), message("what is deployed?"), q)
        (repo / "deploy.yaml").write_text("replicas: 5\n", encoding="utf-8")
        git(repo, "commit", "-q", "-am", "Scale to five replicas")
        (repo / "notes.txt").write_text("draft\n", encoding="utf-8")
        second = await wake(client, a.runtime(), message("and now?"), q)
    assert second.session_id == first.session_id

    def window(wake_id: str) -> str:
        (rec,) = ts.compiles(wake_id)
        outcome = recompile(ts, rec)
        assert outcome.identical, outcome.summary()
        return json.dumps(json.loads(ts.get_blob(rec.window_hash)))

    before, after = window(first.wake_id), window(second.wake_id)
    assert "Deploy with three replicas" in before and "status: clean" in before
    assert "Scale to five replicas" not in before
    assert "Scale to five replicas" in after
    assert "status: 1 changed path(s)\\n  ?? notes.txt" in after
    assert "deploy.yaml: modified " in after and ", 12 bytes" in after
