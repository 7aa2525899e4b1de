"""Temporal's own environment configuration, with Wakeful's settings as overrides.

A team that runs Temporal (Cloud or a secured cluster) already describes its connection
the way every Temporal tool reads it: a profiles file (``TEMPORAL_CONFIG_FILE``, else
``~/.config/temporalio/temporal.toml``) and the ``TEMPORAL_ADDRESS``, ``TEMPORAL_NAMESPACE``,
``TEMPORAL_API_KEY``, ``TEMPORAL_TLS_*`` and ``TEMPORAL_PROFILE`` variables. Wakeful loads
that through :mod:`temporalio.envconfig` rather than inventing variables of its own; an
explicit address or namespace (``WAKEFUL_TEMPORAL_*``, the embedded stack) wins, while TLS,
mTLS and the API key always come from Temporal's configuration.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path

from temporalio.envconfig import (
    ClientConfigProfile,
    ClientConfigTLS,
    ClientConnectConfig,
    DataSource,
)
from temporalio.service import TLSConfig

from wakeful.errors import ConfigError

__all__ = ["connect_config", "load_profile"]

# Where each TLS source is set: the variable and the profile file's key, for error messages.
_TLS_SOURCES = {
    "server_root_ca_cert": ("TEMPORAL_TLS_SERVER_CA_CERT_PATH", "tls.server_ca_cert_path"),
    "client_cert": ("TEMPORAL_TLS_CLIENT_CERT_PATH", "tls.client_cert_path"),
    "client_private_key": ("TEMPORAL_TLS_CLIENT_KEY_PATH", "tls.client_key_path"),
}
_WHERE = "Temporal environment configuration (TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE)"


def load_profile(environ: Mapping[str, str] | None = None) -> ClientConfigProfile:
    """The active Temporal profile: the profiles file overlaid with ``TEMPORAL_*`` variables.

    ``environ`` defaults to the process environment. A missing profiles file is no error
    (nothing configured); a broken one or an unknown ``TEMPORAL_PROFILE`` raises
    :class:`~wakeful.errors.ConfigError` in one line.
    """
    env = dict(os.environ if environ is None else environ)
    try:
        return ClientConfigProfile.load(override_env_vars=env)
    except Exception as err:  # the SDK bridge's own ConfigError, or an unreadable file
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ConfigError(
            f"bad {_WHERE}: {first}; fix the file or the variable, or unset it"
        ) from None


def connect_config(
    address: str | None = None,
    namespace: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> ClientConnectConfig:
    """Keyword arguments for ``temporalio.client.Client.connect``.

    ``address``/``namespace`` override the profile's; TLS (server CA, client cert and
    key, server name), the API key and gRPC metadata come from the profile. Certificate
    files are read here, so a missing one fails as a :class:`~wakeful.errors.ConfigError`
    naming its variable rather than deep inside the connection.
    """
    profile = load_profile(environ)
    # The SDK's own conversion (API key turns TLS on, gRPC metadata), minus the TLS files,
    # which it would read with a bare FileNotFoundError.
    config = dataclasses.replace(profile, tls=None).to_client_connect_config()
    if profile.tls is not None:
        config["tls"] = _tls(profile.tls)
    target = address or profile.address
    if not target:
        raise ConfigError(
            "no Temporal address: set WAKEFUL_TEMPORAL_ADDRESS or TEMPORAL_ADDRESS "
            "(or an address in the Temporal profile), or leave both unset for the embedded "
            "dev server"
        )
    config["target_host"] = target
    config["namespace"] = namespace or profile.namespace or "default"
    return config


def _tls(tls: ClientConfigTLS) -> bool | TLSConfig:
    if tls.disabled is True:
        return False
    has_cert, has_key = tls.client_cert is not None, tls.client_private_key is not None
    if has_cert != has_key:
        given, missing = (
            ("client_cert", "client_private_key")
            if has_cert
            else ("client_private_key", "client_cert")
        )
        raise ConfigError(
            f"mTLS needs both a client certificate and its key: {_TLS_SOURCES[given][0]} is "
            f"set but {_TLS_SOURCES[missing][0]} (profile {_TLS_SOURCES[missing][1]}) is not"
        )
    return TLSConfig(
        domain=tls.server_name,
        server_root_ca_cert=_read(tls.server_root_ca_cert, "server_root_ca_cert"),
        client_cert=_read(tls.client_cert, "client_cert"),
        client_private_key=_read(tls.client_private_key, "client_private_key"),
    )


def _read(source: DataSource | None, field: str) -> bytes | None:
    if source is None:
        return None
    if isinstance(source, bytes):
        return source
    if isinstance(source, str):  # inline PEM (the *_DATA variables, the profile's *_data)
        return source.encode()
    path: Path = source
    try:
        return path.read_bytes()
    except OSError as err:
        variable, key = _TLS_SOURCES[field]
        reason = err.strerror or type(err).__name__
        raise ConfigError(
            f"cannot read {path} ({reason}), set by {variable} or the Temporal profile's "
            f"{key}: point it at a readable PEM file or unset it"
        ) from None
