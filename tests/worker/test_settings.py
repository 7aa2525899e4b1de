"""Settings come from the environment, and a bad value fails with one line that names the
variable and what it accepts."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from wakeful.errors import ConfigError
from wakeful.worker import ports, settings
from wakeful.worker.settings import (
    Settings,
    env_var_names,
    find_state_dir,
    load_settings,
    unknown_env_vars,
)

_PLAIN = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Each test sees only the variables it sets, never the developer's shell (nor their
    Temporal profiles file, which fills in the Temporal address and namespace), and runs in
    a folder of its own: the state directory is found from the working directory up, and a
    checkout where the demo ran holds one."""
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith(("WAKEFUL_", "OTEL_", "TEMPORAL_")) or name in _PLAIN:
            monkeypatch.delenv(name)
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(tmp_path / "no-temporal-profiles.toml"))


def test_defaults() -> None:
    s = load_settings()
    assert s.state_dir == Path(".wakeful")
    assert s.qdrant_path == Path(".wakeful/qdrant")
    assert (s.database_url, s.temporal_address, s.qdrant_url) == (None, None, None)
    assert (s.temporal_namespace, s.task_queue, s.tenant) == ("default", "wakeful", "default")
    assert s.webhook_max_body_bytes == 262_144
    assert s.webhook_replay_window_s == 300
    assert s.otel_exporter == "none"


def test_reads_prefixed_variables(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("WAKEFUL_STATE_DIR", str(tmp_path))
    monkeypatch.setenv("WAKEFUL_DATABASE_URL", "postgres://u:pw@db:5432/wakeful")
    monkeypatch.setenv("WAKEFUL_TEMPORAL_ADDRESS", "http://temporal:7233")
    monkeypatch.setenv("WAKEFUL_WEBHOOK_SECRET", "s3cret")
    monkeypatch.setenv("WAKEFUL_WEBHOOK_TENANT_SECRETS", '{"acme": "a-secret"}')
    monkeypatch.setenv("WAKEFUL_OTEL_EXPORTER", "otlp")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")
    s = load_settings()
    assert s.state_dir == tmp_path
    assert s.qdrant_path == tmp_path / "qdrant"
    assert s.database_url == "postgresql+psycopg://u:pw@db:5432/wakeful"
    assert s.temporal_address == "temporal:7233"
    assert s.webhook_secret is not None and s.webhook_secret.get_secret_value() == "s3cret"
    assert s.webhook_tenant_secrets["acme"].get_secret_value() == "a-secret"
    assert (s.otel_exporter, s.otel_endpoint) == ("otlp", "http://collector:4318")


def test_provider_keys_from_sdk_names_and_prefixed_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "plain")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9999/v1")
    s = load_settings()
    assert s.anthropic_api_key is not None
    assert s.anthropic_api_key.get_secret_value() == "plain"
    assert s.openai_base_url == "http://127.0.0.1:9999/v1"
    monkeypatch.setenv("WAKEFUL_ANTHROPIC_API_KEY", "prefixed")
    key = load_settings().anthropic_api_key
    assert key is not None and key.get_secret_value() == "prefixed"
    assert env_var_names("anthropic_api_key") == ("WAKEFUL_ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY")


def test_empty_variable_means_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WAKEFUL_DATABASE_URL", "")
    monkeypatch.setenv("WAKEFUL_TEMPORAL_NAMESPACE", "")
    s = load_settings()
    assert (s.database_url, s.temporal_namespace) == (None, "default")


def test_overrides_beat_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WAKEFUL_TASK_QUEUE", "from-env")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "from-env")
    s = load_settings(task_queue="override", anthropic_api_key="override")
    assert s.task_queue == "override"
    assert s.anthropic_api_key is not None
    assert s.anthropic_api_key.get_secret_value() == "override"


def _refusal(monkeypatch: pytest.MonkeyPatch, name: str, value: str, **overrides: Any) -> str:
    """What ``load_settings(**overrides)`` says, as a ConfigError, with ``name`` set to
    ``value`` in the environment."""
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as caught:
        load_settings(**overrides)
    return str(caught.value)


def test_bad_integer_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    message = _refusal(monkeypatch, "WAKEFUL_WEBHOOK_MAX_BODY_BYTES", "lots")
    assert "\n" not in message
    assert "WAKEFUL_WEBHOOK_MAX_BODY_BYTES='lots'" in message
    assert "valid integer" in message


def test_activity_threads_are_read_and_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings().activity_threads == 32
    monkeypatch.setenv("WAKEFUL_ACTIVITY_THREADS", "8")
    assert load_settings().activity_threads == 8
    monkeypatch.setenv("WAKEFUL_ACTIVITY_THREADS", "0")
    with pytest.raises(ConfigError, match=r"WAKEFUL_ACTIVITY_THREADS='0'.*greater than"):
        load_settings()


def test_the_wait_for_a_worker_is_read_and_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings().worker_wait_s == 5.0  # what a user gets
    monkeypatch.setenv("WAKEFUL_WORKER_WAIT_S", "0.5")
    assert load_settings().worker_wait_s == 0.5
    monkeypatch.setenv("WAKEFUL_WORKER_WAIT_S", "-1")
    with pytest.raises(ConfigError, match=r"WAKEFUL_WORKER_WAIT_S='-1'.*greater than or equal"):
        load_settings()


def test_bad_choice_lists_what_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WAKEFUL_OTEL_EXPORTER", "jaeger")
    with pytest.raises(
        ConfigError,
        match=r"WAKEFUL_OTEL_EXPORTER / OTEL_TRACES_EXPORTER='jaeger'.*'none', 'console'",
    ):
        load_settings()


def test_errors_mask_passwords(monkeypatch: pytest.MonkeyPatch) -> None:
    message = _refusal(
        monkeypatch, "WAKEFUL_DATABASE_URL", "mysql://user:hunter2@db/x", qdrant_api_key=42
    )
    assert "hunter2" not in message
    assert "WAKEFUL_DATABASE_URL='mysql://user:***@db/x' is invalid" in message
    assert "postgres://" in message
    assert "WAKEFUL_QDRANT_API_KEY=<hidden>" in message
    assert "42" not in message


def test_bad_json_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    message = _refusal(monkeypatch, "WAKEFUL_WEBHOOK_TENANT_SECRETS", "acme=hunter3")
    assert "hunter3" not in message
    assert "WAKEFUL_WEBHOOK_TENANT_SECRETS is not valid JSON" in message
    assert '{"tenant": "secret"}' in message


def test_unknown_override_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown setting 'databse_url'"):
        load_settings(databse_url="postgres://x")


def test_settings_are_immutable() -> None:
    s = load_settings()
    with pytest.raises(ValueError):
        s.task_queue = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("given", "sqlalchemy", "libpq"),
    [
        ("postgres://u@h/db", "postgresql+psycopg://u@h/db", "postgresql://u@h/db"),
        ("postgresql://u@h:5/db", "postgresql+psycopg://u@h:5/db", "postgresql://u@h:5/db"),
        ("postgresql+psycopg://u@/d?host=/s", "postgresql+psycopg://u@/d?host=/s", None),
    ],
)
def test_database_url_forms(given: str, sqlalchemy: str, libpq: str | None) -> None:
    assert Settings.sqlalchemy_url(given) == sqlalchemy
    assert ports.libpq_url(given) == (libpq or "postgresql://u@/d?host=/s")


@pytest.mark.parametrize("bad", ["mysql://h/db", "postgresql+asyncpg://h/db", "h/db"])
def test_database_url_other_drivers_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="postgresql\\+psycopg"):
        ports.sqlalchemy_url(bad)


@pytest.mark.parametrize(
    ("given", "target"),
    [
        ("localhost:7233", "localhost:7233"),
        ("temporal", "temporal:7233"),
        ("http://temporal:7000", "temporal:7000"),
        ("grpc://10.0.0.1:7233/", "10.0.0.1:7233"),
        ("[::1]:7000", "[::1]:7000"),
    ],
)
def test_temporal_address_forms(given: str, target: str) -> None:
    assert ports.temporal_target(given) == target


@pytest.mark.parametrize("bad", ["", "http://h:7233/ns", "h:port"])
def test_temporal_address_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="host:port"):
        ports.temporal_target(bad)


def test_public_names_exist() -> None:
    for module in (settings, ports):
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"


def test_the_state_directory_is_found_like_git_finds_dot_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("WAKEFUL_STATE_DIR", raising=False)
    project = tmp_path / "project"
    (project / ".wakeful").mkdir(parents=True)
    deeper = project / "src" / "pkg"
    deeper.mkdir(parents=True)
    monkeypatch.chdir(deeper)
    assert find_state_dir(deeper) == (project / ".wakeful").resolve()
    found = load_settings()
    assert found.state_dir == (project / ".wakeful").resolve()
    assert found.qdrant_path == (project / ".wakeful" / "qdrant").resolve()
    monkeypatch.setenv("WAKEFUL_STATE_DIR", str(tmp_path / "elsewhere"))
    assert load_settings().state_dir == tmp_path / "elsewhere"  # the variable wins
    monkeypatch.delenv("WAKEFUL_STATE_DIR")
    bare = tmp_path / "bare"
    bare.mkdir()
    monkeypatch.chdir(bare)
    assert find_state_dir(bare) is None
    assert load_settings().state_dir == Path(".wakeful")  # none: here, when a command creates it


def test_unknown_wakeful_variables_are_named_with_the_closest_setting() -> None:
    environ = {
        "WAKEFUL_DATABSE_URL": "postgresql://x",
        "WAKEFUL_TENANT": "ops",
        "WAKEFUL_AGENTS": "pkg:registry",
        "WAKEFUL_FROBNICATE": "1",
        "HOME": "/root",
    }
    assert unknown_env_vars(environ) == [
        ("WAKEFUL_DATABSE_URL", "WAKEFUL_DATABASE_URL"),
        ("WAKEFUL_FROBNICATE", None),
    ]


def test_reads_the_standard_otel_variables_and_wakeful_names_win(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "billing-agents")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    s = load_settings()
    assert (s.otel_exporter, s.otel_service_name) == ("console", "billing-agents")
    assert s.otel_capture_message_content
    monkeypatch.setenv("WAKEFUL_OTEL_EXPORTER", "none")
    monkeypatch.setenv("WAKEFUL_OTEL_SERVICE_NAME", "wk")
    s = load_settings()
    assert (s.otel_exporter, s.otel_service_name) == ("none", "wk")
