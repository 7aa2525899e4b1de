"""Compile policies read from files: the worker's policy directory and ``Agent(policy=path)``.

The compiler parses policy text but reads no files (it does no I/O); this is where files
are read. A policy's name is its ``name`` field, or else the file's stem, so that
``policies/triage.toml`` without a ``name`` is the policy ``triage`` — and the ledger of
every compile by it says ``triage``, not ``default``.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import yaml

from wakeful.compiler.policy import WindowPolicy, load_policy_file, policy_from_data
from wakeful.errors import ConfigError, PolicyError
from wakeful.runtime_settings import SETTINGS_TABLES, RuntimeSettings, settings_from_tables

__all__ = [
    "POLICY_SUFFIXES",
    "is_policy_path",
    "load_policy_and_settings",
    "load_policy_path",
    "settings_of_policy_path",
]

POLICY_SUFFIXES = (".toml", ".yaml", ".yml")


def is_policy_path(value: str) -> bool:
    """Whether an agent's ``policy`` names a file rather than a policy."""
    return value.lower().endswith(POLICY_SUFFIXES)


# A policy file's tables that are the agent's runtime settings, not the compile policy's.
_SETTINGS = (*SETTINGS_TABLES, "redaction")


def load_policy_path(path: Path) -> WindowPolicy:
    """The policy in ``path``, named by its ``name`` field or the file's stem; a file that
    cannot be read, parsed or validated is one :class:`ConfigError` line naming the file
    and the field."""
    return load_policy_and_settings(path)[0]


def settings_of_policy_path(path: Path) -> RuntimeSettings | None:
    """The runtime settings of the policy file ``path`` (``wakeful.runtime_settings``)."""
    return load_policy_and_settings(path)[1]


def _data(text: str, filename: str) -> Any:
    """The file's parsed data when it is a mapping holding settings tables, else None."""
    lowered = filename.lower()
    try:
        if lowered.endswith((".yaml", ".yml")):
            data = yaml.safe_load(text)
        else:
            data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError):
        return None  # the compiler's parser says what is wrong
    if isinstance(data, dict) and any(t in data for t in _SETTINGS):
        return data
    return None


def load_policy_and_settings(path: Path) -> tuple[WindowPolicy, RuntimeSettings | None]:
    """The policy in ``path`` (as :func:`load_policy_path`) and the runtime settings of its
    ``[consolidation]``, ``[pacing]``, ``[handoff]`` and ``[redaction]`` tables."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(f"cannot read policy file {path}: {why}") from None
    data = _data(text, path.name)
    settings: RuntimeSettings | None = None
    try:
        if data is None:
            policy = load_policy_file(text, path.name)
        else:
            try:
                settings = settings_from_tables(data)
            except ConfigError as exc:
                raise PolicyError(str(exc)) from None
            policy = policy_from_data({k: v for k, v in data.items() if k not in _SETTINGS})
    except PolicyError as exc:
        why = " ".join(str(exc).removeprefix("invalid policy: ").split())
        raise ConfigError(f"bad policy file {path}: {why}") from None
    if "name" not in policy.model_fields_set:
        policy = WindowPolicy.model_validate({**policy.model_dump(), "name": path.stem})
    return policy, settings
