"""The Temporal connection comes from Temporal's environment configuration (profiles file,
``TEMPORAL_*`` variables) with ``WAKEFUL_TEMPORAL_*`` as overrides; bad TLS configuration
fails with one line naming the variable."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from temporalio.service import TLSConfig

from wakeful.errors import ConfigError
from wakeful.worker.settings import load_settings
from wakeful.worker.stack import EmbeddedStack
from wakeful.worker.temporal_env import connect_config


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """An environment with no profiles file (a path that does not exist), never the
    developer's own ``~/.config/temporalio/temporal.toml``."""
    return {"TEMPORAL_CONFIG_FILE": str(tmp_path / "absent.toml")}


@pytest.fixture
def pems(tmp_path: Path) -> dict[str, Path]:
    # The contents are only read and passed on here; the TLS e2e test uses real ones.
    files = {}
    for name in ("ca", "cert", "key"):
        files[name] = tmp_path / f"{name}.pem"
        files[name].write_bytes(f"-----{name}-----\n".encode())
    return files


def test_variables_give_address_namespace_api_key_and_tls(
    env: dict[str, str], pems: dict[str, Path]
) -> None:
    env |= {
        "TEMPORAL_ADDRESS": "acme.a1b2c.tmprl.cloud:7233",
        "TEMPORAL_NAMESPACE": "acme.a1b2c",
        "TEMPORAL_API_KEY": "sekrit",
        "TEMPORAL_TLS_SERVER_CA_CERT_PATH": str(pems["ca"]),
        "TEMPORAL_TLS_SERVER_NAME": "temporal.internal",
    }
    config = connect_config(environ=env)
    assert config["target_host"] == "acme.a1b2c.tmprl.cloud:7233"
    assert config["namespace"] == "acme.a1b2c"
    assert config["api_key"] == "sekrit"
    assert config["tls"] == TLSConfig(
        domain="temporal.internal", server_root_ca_cert=b"-----ca-----\n"
    )


def test_api_key_alone_turns_tls_on(env: dict[str, str]) -> None:
    env |= {"TEMPORAL_ADDRESS": "cloud:7233", "TEMPORAL_API_KEY": "k"}
    assert connect_config(environ=env)["tls"] is True


def test_profile_file_gives_mtls(
    env: dict[str, str], pems: dict[str, Path], tmp_path: Path
) -> None:
    profiles = tmp_path / "temporal.toml"
    profiles.write_text(
        '[profile.default]\naddress = "localhost:7233"\n\n'
        '[profile.prod]\naddress = "prod.example:7233"\nnamespace = "agents"\n'
        '[profile.prod.tls]\nserver_name = "prod.example"\n'
        f'server_ca_cert_path = "{pems["ca"]}"\n'
        f'client_cert_path = "{pems["cert"]}"\nclient_key_path = "{pems["key"]}"\n'
        '[profile.prod.grpc_meta]\nteam = "agents"\n'
    )
    env |= {"TEMPORAL_CONFIG_FILE": str(profiles), "TEMPORAL_PROFILE": "prod"}
    config = connect_config(environ=env)
    assert (config["target_host"], config["namespace"]) == ("prod.example:7233", "agents")
    assert config["tls"] == TLSConfig(
        domain="prod.example",
        server_root_ca_cert=b"-----ca-----\n",
        client_cert=b"-----cert-----\n",
        client_private_key=b"-----key-----\n",
    )
    assert config["rpc_metadata"] == {"team": "agents"}
    assert "api_key" not in config


def test_explicit_address_and_namespace_win(env: dict[str, str]) -> None:
    env |= {"TEMPORAL_ADDRESS": "cloud:7233", "TEMPORAL_NAMESPACE": "theirs"}
    config = connect_config("mine:7233", "ours", environ=env)
    assert (config["target_host"], config["namespace"]) == ("mine:7233", "ours")


def test_tls_can_be_turned_off(env: dict[str, str]) -> None:
    env |= {"TEMPORAL_ADDRESS": "h:7233", "TEMPORAL_API_KEY": "k", "TEMPORAL_TLS": "false"}
    assert connect_config(environ=env)["tls"] is False


def test_nothing_configured_is_plain_default_namespace(env: dict[str, str]) -> None:
    config = connect_config("127.0.0.1:7233", environ=env)
    assert config == {"target_host": "127.0.0.1:7233", "namespace": "default"}


def test_missing_certificate_file_is_one_line_naming_the_variable(
    env: dict[str, str], tmp_path: Path
) -> None:
    missing = tmp_path / "nowhere" / "ca.pem"
    env |= {"TEMPORAL_ADDRESS": "h:7233", "TEMPORAL_TLS_SERVER_CA_CERT_PATH": str(missing)}
    with pytest.raises(ConfigError) as caught:
        connect_config(environ=env)
    message = str(caught.value)
    assert "\n" not in message
    assert "TEMPORAL_TLS_SERVER_CA_CERT_PATH" in message
    assert str(missing) in message
    assert "No such file" in message


def test_client_cert_without_key_is_refused(env: dict[str, str], pems: dict[str, Path]) -> None:
    env |= {"TEMPORAL_ADDRESS": "h:7233", "TEMPORAL_TLS_CLIENT_CERT_PATH": str(pems["cert"])}
    with pytest.raises(ConfigError, match=r"TEMPORAL_TLS_CLIENT_KEY_PATH.* is not$"):
        connect_config(environ=env)


def test_unknown_profile_is_one_line(env: dict[str, str], tmp_path: Path) -> None:
    profiles = tmp_path / "temporal.toml"
    profiles.write_text('[profile.default]\naddress = "h:7233"\n')
    env |= {"TEMPORAL_CONFIG_FILE": str(profiles), "TEMPORAL_PROFILE": "staging"}
    with pytest.raises(ConfigError) as caught:
        connect_config(environ=env)
    assert "\n" not in str(caught.value)
    assert "'staging' not found" in str(caught.value)


# --- settings: Temporal's address counts as "set", WAKEFUL_TEMPORAL_* win -----------------


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> pytest.MonkeyPatch:
    for name in list(os.environ):
        if name.startswith(("WAKEFUL_", "TEMPORAL_")):
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return monkeypatch


def test_temporal_address_is_used_instead_of_the_embedded_server(
    clean: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    clean.setenv("TEMPORAL_ADDRESS", "temporal.example:7233")
    clean.setenv("TEMPORAL_NAMESPACE", "agents")
    s = load_settings(
        state_dir=tmp_path / "state",
        database_url="postgresql://u@db/x",
        qdrant_url="http://qdrant:6333",
    )
    assert (s.temporal_address, s.temporal_namespace) == ("temporal.example:7233", "agents")
    ep = EmbeddedStack(s).up()  # nothing embedded: starts no server
    assert "temporal" not in ep.embedded
    assert (ep.temporal_address, ep.temporal_namespace) == ("temporal.example:7233", "agents")


def test_profile_address_counts_as_set(clean: pytest.MonkeyPatch, tmp_path: Path) -> None:
    profiles = tmp_path / "temporal.toml"
    profiles.write_text('[profile.default]\naddress = "from-profile:7233"\n')
    clean.setenv("TEMPORAL_CONFIG_FILE", str(profiles))
    assert load_settings().temporal_address == "from-profile:7233"


def test_wakeful_settings_override_temporal_variables(clean: pytest.MonkeyPatch) -> None:
    clean.setenv("TEMPORAL_ADDRESS", "theirs:7233")
    clean.setenv("TEMPORAL_NAMESPACE", "theirs")
    clean.setenv("WAKEFUL_TEMPORAL_ADDRESS", "mine:7233")
    clean.setenv("WAKEFUL_TEMPORAL_NAMESPACE", "mine")
    s = load_settings()
    assert (s.temporal_address, s.temporal_namespace) == ("mine:7233", "mine")
    s = load_settings(temporal_address="kw:7233", temporal_namespace="kw")
    assert (s.temporal_address, s.temporal_namespace) == ("kw:7233", "kw")


def test_no_temporal_configuration_keeps_the_embedded_default(
    clean: pytest.MonkeyPatch,
) -> None:
    s = load_settings()
    assert (s.temporal_address, s.temporal_namespace) == (None, "default")


def test_tls_or_an_api_key_without_an_address_is_one_line(clean: pytest.MonkeyPatch) -> None:
    """Without an address the embedded dev server would start and the secured connection
    fail against it: the settings say what is missing instead. An explicit address (or
    TLS turned off) is fine."""
    clean.setenv("TEMPORAL_API_KEY", "k-123")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    message = str(caught.value)
    assert "\n" not in message and "k-123" not in message
    assert "TLS or an API key but no address" in message and "TEMPORAL_ADDRESS" in message
    assert load_settings(temporal_address="cloud:7233").temporal_address == "cloud:7233"
    clean.delenv("TEMPORAL_API_KEY")
    clean.setenv("TEMPORAL_TLS", "false")
    assert load_settings().temporal_address is None
