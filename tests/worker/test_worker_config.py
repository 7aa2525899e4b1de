"""A worker refuses, before it starts anything, to serve an agent no wake could run: one
line naming the agent and the fix, exit 2 from the CLI. (It used to start and poll, and each
wake found out after its model call's retries.)"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from wakeful.agents import Agent, AgentRegistry
from wakeful.errors import ConfigError
from wakeful.worker.serve import serve
from wakeful.worker.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
_PROVIDER_VARS = tuple(
    f"{prefix}{family}_{var}"
    for prefix in ("", "WAKEFUL_")
    for family in ("ANTHROPIC", "OPENAI")
    for var in ("API_KEY", "BASE_URL")
)


@pytest.fixture
def servers(
    pg_url: str, temporal_dev: WorkflowEnvironment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, str]]:
    """The session's servers, so that a worker that did start would poll (and not spin up an
    embedded stack); no provider configuration from the shell."""
    for name in list(os.environ):
        if name.startswith("WAKEFUL_") or name in _PROVIDER_VARS:
            monkeypatch.delenv(name)
    yield {
        "WAKEFUL_DATABASE_URL": pg_url,
        "WAKEFUL_TEMPORAL_ADDRESS": temporal_dev.client.service_client.config.target_host,
        "WAKEFUL_STATE_DIR": str(tmp_path / "state"),
        "WAKEFUL_TENANT": f"cfg-{uuid.uuid4().hex[:8]}",
        "WAKEFUL_TASK_QUEUE": f"q-{uuid.uuid4().hex[:8]}",
    }


KEY = {"anthropic_api_key": "k-unused"}
CASES = [
    pytest.param(
        {},
        {},
        "no API key for provider 'anthropic': set ANTHROPIC_API_KEY",
        id="no-key",
    ),
    pytest.param(
        KEY, {"provider": "gemini"}, "unknown model provider 'gemini'", id="unknown-provider"
    ),
    pytest.param(
        KEY,
        {"policy": "no-such-policy"},
        "unknown compile policy 'no-such-policy' (known: default)",
        id="unknown-policy",
    ),
    pytest.param(
        {"anthropic_base_url": "http://"},
        {},
        "ANTHROPIC_BASE_URL has no host",
        id="base-url-without-host",
    ),
    pytest.param(KEY, {"model": "m"}, "no price for anthropic model 'm'", id="unpriced-model"),
]


@pytest.mark.parametrize(("settings", "fields", "says"), CASES)
async def test_serve_refuses_an_agent_no_wake_could_run(
    servers: dict[str, str], settings: dict[str, str], fields: dict[str, str], says: str
) -> None:
    tenant = servers["WAKEFUL_TENANT"]
    agent = Agent(name="clerk", instructions="Answer briefly.", tenant=tenant, **fields)  # type: ignore[arg-type]
    config = Settings(
        database_url=servers["WAKEFUL_DATABASE_URL"],
        temporal_address=servers["WAKEFUL_TEMPORAL_ADDRESS"],
        state_dir=Path(servers["WAKEFUL_STATE_DIR"]),
        task_queue=servers["WAKEFUL_TASK_QUEUE"],
        **settings,  # type: ignore[arg-type]
    )
    with pytest.raises(ConfigError) as refused:
        # Bounded only so that a worker that does start fails the test instead of holding it.
        await asyncio.wait_for(serve(config, AgentRegistry([agent])), timeout=30)
    message = str(refused.value)
    assert message.startswith(f"cannot serve agent 'clerk' of tenant '{tenant}': "), message
    assert says in message and "\n" not in message
    assert not config.state_dir.exists()  # refused before the stack was touched


def _worker(env: dict[str, str], agents: str, path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "wakeful.cli.main", "worker", "--agents", agents],
        env=os.environ | env | {"PYTHONPATH": os.pathsep.join([str(path), str(ROOT)])},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,  # a failure bound: a worker that starts would poll until killed
    )


BAD_BUDGET = """
from wakeful.agents import Agent, AgentRegistry

registry = AgentRegistry([Agent(name="clerk", instructions="x", max_tokens_per_wake=-1)])
"""


@pytest.mark.parametrize(
    ("agents", "says"),
    [
        (
            "tests.ops.cli_agents:registry",
            "error: cannot serve agent 'clerk' of tenant '{tenant}': no API key for provider "
            "'anthropic': set ANTHROPIC_API_KEY",
        ),
        (
            "bad_budget_agents:registry",
            "error: agent 'clerk': max_tokens_per_wake must be an integer >= 1 (got -1)",
        ),
    ],
    ids=["no-key", "bad-budget"],
)
def test_the_worker_command_exits_2_with_one_line(
    servers: dict[str, str], tmp_path: Path, agents: str, says: str
) -> None:
    (tmp_path / "bad_budget_agents.py").write_text(BAD_BUDGET, encoding="utf-8")
    done = _worker(servers, agents, tmp_path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert lines[-1].startswith(says.format(tenant=servers["WAKEFUL_TENANT"])), done.stderr
    assert "Traceback" not in done.stderr
    assert [line for line in lines if line.startswith("error:")] == [lines[-1]]
