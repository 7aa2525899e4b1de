"""A ``wakeful worker`` configured with compile policies: its agents file, its policy
directory, and the ledger a wake's compile recorded."""

from __future__ import annotations

from pathlib import Path

from tests.ops.cli_env import worker_refuses
from wakeful.compiler import Ledger
from wakeful.substrate.store import Store

# One agent, ``clerk``, in the CLI's tenant, using the policy CLERK_POLICY names (triage).
AGENTS = """
import os

from wakeful.agents import Agent, AgentRegistry

registry = AgentRegistry(
    [
        Agent(
            name="clerk",
            instructions="Answer briefly.",
            tenant=os.environ["WAKEFUL_TENANT"],
            policy=os.environ.get("CLERK_POLICY", "triage"),
        )
    ]
)
"""


def agents_file(tmp_path: Path) -> str:
    """Write :data:`AGENTS` under ``tmp_path``; returns the ``--agents`` value for it."""
    path = tmp_path / "policy_agents.py"
    path.write_text(AGENTS)
    return f"{path}:registry"


def policy_dir(tmp_path: Path, files: dict[str, str]) -> Path:
    """A policy directory under ``tmp_path`` holding ``files`` (name to text)."""
    directory = tmp_path / "policies"
    directory.mkdir(exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(text)
    return directory


def wake_ledger(
    store: Store, tenant: str, wake_number: int
) -> tuple[Ledger, dict[str, object], str]:
    """The ledger, goal and window of the one compile of ``clerk``'s wake ``wake_number``."""
    ts = store.tenant(tenant)
    wake = ts.wake_by_number("clerk", wake_number)
    (rec,) = ts.compiles(wake.wake_id)
    ledger = Ledger.model_validate_json(ts.get_blob(rec.ledger_hash))
    return ledger, rec.goal, ts.get_blob(rec.window_hash)


def clerk_worker_refuses(tmp_path: Path, env: dict[str, str], settings: dict[str, str]) -> str:
    """``wakeful worker`` serving :data:`AGENTS`, with ``settings`` over ``env``, must refuse
    to start with one ``error:`` line (returned). It has an Anthropic key, so that only what
    ``settings`` says can be wrong (nothing is called before the refusal)."""
    return worker_refuses(agents_file(tmp_path), env | {"ANTHROPIC_API_KEY": "k-start"} | settings)
