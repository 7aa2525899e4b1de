"""Compile policies read from files: the worker's policy directory and ``Agent(policy=path)``.

The compiler parses policy text but reads no files (it does no I/O); this is where files
are read. A policy's name is its ``name`` field, or else the file's stem, so that
``policies/triage.toml`` without a ``name`` is the policy ``triage`` — and the ledger of
every compile by it says ``triage``, not ``default``.
"""

from __future__ import annotations

from pathlib import Path

from wakeful.compiler.policy import WindowPolicy, load_policy_file
from wakeful.errors import ConfigError, PolicyError

__all__ = ["POLICY_SUFFIXES", "is_policy_path", "load_policy_path"]

POLICY_SUFFIXES = (".toml", ".yaml", ".yml")


def is_policy_path(value: str) -> bool:
    """Whether an agent's ``policy`` names a file rather than a policy."""
    return value.lower().endswith(POLICY_SUFFIXES)


def load_policy_path(path: Path) -> WindowPolicy:
    """The policy in ``path``, named by its ``name`` field or the file's stem; a file that
    cannot be read, parsed or validated is one :class:`ConfigError` line naming the file
    and the field."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(f"cannot read policy file {path}: {why}") from None
    try:
        policy = load_policy_file(text, path.name)
    except PolicyError as exc:
        why = " ".join(str(exc).removeprefix("invalid policy: ").split())
        raise ConfigError(f"bad policy file {path}: {why}") from None
    if "name" in policy.model_fields_set:
        return policy
    return WindowPolicy.model_validate({**policy.model_dump(), "name": path.stem})
