"""WindowPolicy files: a directory of policies (WAKEFUL_POLICY_DIR) and ``Agent(policy=path)``,
read once at start; a bad one is one line naming the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from wakeful.activities.deps import ActivityDeps, load_policies
from wakeful.agents import Agent, AgentRegistry
from wakeful.errors import ConfigError
from wakeful.substrate.store import Store
from wakeful.tokenizers import BpeCounter
from wakeful.worker.plugin import WakefulPlugin
from wakeful.worker.settings import Settings

GLOB = "version = 1\n[[triggers]]\nname = 'py'\npaths = ['src/*.py']\nrules = ['Test it.']\n"


def _write(directory: Path, files: dict[str, str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(text)
    return directory


def _no_providers(name: str) -> object:
    raise AssertionError("no provider is built here")


def test_a_directory_names_its_policies_by_name_field_or_file_stem(tmp_path: Path) -> None:
    directory = _write(
        tmp_path / "p",
        {
            "triage.toml": GLOB,
            "other.yaml": "version: 1\nname: night-shift\nbudget:\n  context_limit: 50000\n",
            "README.md": "not a policy",
        },
    )
    policies = load_policies(directory)
    assert sorted(policies) == ["night-shift", "triage"]
    assert policies["triage"].name == "triage"  # not "default": the ledger says triage
    assert [t.name for t in policies["triage"].triggers] == ["py"]
    assert policies["night-shift"].budget.context_limit == 50_000
    assert load_policies(None) == {}


def test_a_bad_policy_file_is_one_line_naming_the_file_and_the_field(tmp_path: Path) -> None:
    directory = _write(tmp_path / "p", {"a.toml": GLOB, "b.toml": "[ranking]\nfloor = 3\n"})
    with pytest.raises(ConfigError) as err:
        load_policies(directory)
    text = str(err.value)
    assert "\n" not in text and str(directory / "b.toml") in text
    assert "ranking.floor" in text

    broken = _write(tmp_path / "q", {"x.toml": "version = [\n"})
    with pytest.raises(ConfigError, match=r"bad policy file .*x\.toml: <policy>: not valid TOML"):
        load_policies(broken)


def test_two_files_of_one_name_and_a_missing_directory_are_refused(tmp_path: Path) -> None:
    named = "version = 1\nname = 'triage'\n"
    directory = _write(tmp_path / "p", {"triage.toml": GLOB, "z.toml": named})
    with pytest.raises(ConfigError, match="both define policy 'triage'"):
        load_policies(directory)
    with pytest.raises(ConfigError, match="does not exist or is not a directory"):
        load_policies(tmp_path / "nowhere")


def test_the_policy_dir_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().policy_dir is None
    monkeypatch.setenv("WAKEFUL_POLICY_DIR", str(tmp_path))
    assert Settings().policy_dir == tmp_path
    monkeypatch.setenv("HOME", str(tmp_path))
    assert Settings(policy_dir=Path("~/p")).policy_dir == tmp_path / "p"


def test_an_agent_names_a_policy_file_read_with_its_registry(tmp_path: Path, store: Store) -> None:
    path = _write(tmp_path / "p", {"mine.toml": GLOB}) / "mine.toml"
    agent = Agent(name="a", instructions="x", policy=str(path))
    registry = AgentRegistry([agent])
    assert registry.policies[str(path)].name == "mine"
    deps = ActivityDeps(store=store, agents=registry, providers=_no_providers, counter=BpeCounter())  # type: ignore[arg-type]
    assert deps.policy(agent.runtime().policy).name == "mine"

    with pytest.raises(ConfigError, match=r"agent 'b': cannot read policy file .*gone\.toml"):
        AgentRegistry([Agent(name="b", instructions="x", policy=str(tmp_path / "gone.toml"))])


def test_the_plugin_refuses_an_agent_whose_policy_is_unknown(store: Store) -> None:
    registry = AgentRegistry([Agent(name="a", instructions="x", policy="ghost")])
    deps = ActivityDeps(store=store, agents=registry, providers=_no_providers, counter=BpeCounter())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"agent 'a' .*unknown compile policy 'ghost'"):
        WakefulPlugin(deps)


def test_a_directory_policy_with_runtime_settings_is_served_and_warned_about(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Settings tables are the agent's, read when it names the file by path: in the worker's
    directory the policy is served without them, and the worker says where they apply."""
    directory = _write(tmp_path / "p", {"ops.toml": GLOB + "\n[consolidation]\nmin_age = '5m'\n"})
    with caplog.at_level("WARNING", logger="wakeful.activities.deps"):
        policies = load_policies(directory)
    assert policies["ops"] == load_policies(_write(tmp_path / "q", {"ops.toml": GLOB}))["ops"]
    (record,) = caplog.records
    assert "holds runtime settings" in record.getMessage()
    assert f"Agent(policy='{directory / 'ops.toml'}')" in record.getMessage()
