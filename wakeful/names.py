"""One rule for tenant and agent names, wherever they come from.

Names end up in workflow ids (``wakeful-agent:{tenant}:{agent}``), URLs, log lines and
every substrate row, so they are checked once, by this module, at each door: settings, the
secrets map, ``Agent(...)``, the CLI and the ingress URL.

* A **name** is 1-64 characters of ``A-Z a-z 0-9 _ . -``, starting with a letter or digit.
  It never contains ``:`` (the workflow id separator) nor ``/``, so no two (tenant, agent)
  pairs can build the same id.
* A **child agent's name** is its parent's name followed by ``/child/<n>`` (nested children
  repeat the suffix); Wakeful builds these itself, users never choose them.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

from wakeful.errors import ConfigError

__all__ = [
    "NAME_PATTERN",
    "NAME_RULE",
    "AgentName",
    "TenantName",
    "check_agent_name",
    "check_tenant",
    "child_prefix",
    "is_agent_name",
    "is_name",
]

NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}"
_NAME = re.compile(NAME_PATTERN)
_AGENT = re.compile(rf"{NAME_PATTERN}(?:/child/[1-9][0-9]{{0,8}})*")
# What a refused name is told to look like (also in the settings' messages).
NAME_RULE = "1-64 characters of A-Z a-z 0-9 _ . -, starting with a letter or digit"


def is_name(value: object) -> bool:
    """Whether ``value`` is a valid tenant name or (user-chosen) agent name."""
    return isinstance(value, str) and _NAME.fullmatch(value) is not None


def is_agent_name(value: object) -> bool:
    """Whether ``value`` is a valid agent name, a child agent's ``<parent>/child/<n>`` included."""
    return isinstance(value, str) and _AGENT.fullmatch(value) is not None


def _refusal(kind: str, value: object, where: str = "") -> str:
    shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
    origin = f" (from {where})" if where else ""
    return f"{kind} name {shown}{origin} is invalid: use {NAME_RULE}"


def _check(kind: str, value: object, ok: bool, where: str) -> str:
    if not ok:
        raise ConfigError(_refusal(kind, value, where))
    assert isinstance(value, str)
    return value


def _tenant_field(value: str) -> str:
    if not is_name(value):
        raise ValueError(_refusal("tenant", value))
    return value


def _agent_field(value: str) -> str:
    if not is_agent_name(value):
        raise ValueError(_refusal("agent", value))
    return value


# Model fields holding a name: pydantic refuses a bad one with the rule's message.
TenantName = Annotated[str, AfterValidator(_tenant_field)]
AgentName = Annotated[str, AfterValidator(_agent_field)]  # a child's name included


def check_tenant(value: object, where: str = "") -> str:
    """``value`` if it is a valid tenant name; else :class:`ConfigError` naming the rule."""
    return _check("tenant", value, is_name(value), where)


def check_agent_name(value: object, where: str = "", *, child: bool = False) -> str:
    """``value`` if it is a valid agent name (``child=True`` also admits ``<parent>/child/<n>``)."""
    ok = is_agent_name(value) if child else is_name(value)
    return _check("agent", value, ok, where)


def child_prefix(agent: str) -> str:
    """What the names of ``agent``'s children (and theirs) start with: ``<agent>/child/``."""
    return f"{agent}/child/"
