"""An agent's runtime settings: consolidation, pacing, the handoff note's model, redaction.

Set on the agent (``Agent(consolidation_min_age=..., keep_warm_calls=..., ...)``) or in its
policy file, in tables beside the compile policy's (the agent's own value wins)::

    [consolidation]
    min_age = "10m"          # history younger than this stays raw (default 1h)
    keep_events = 10         # the newest events are never consolidated (default 40)
    summary_model = "claude-haiku-4-5"   # default: the agent's model

    [pacing]
    keep_warm_calls = 0      # keep-warm calls per idle period (default 3; 0: never)
    handoff_after_idle = "30m"   # a session idle this long ends with a handoff (unset:
                                 # 1h, unless continuing it is priced cheaper)

    [handoff]
    model = "claude-haiku-4-5"   # the model that writes the handoff note

    [redaction]
    email = true             # switch rules of wakeful/redaction.toml on (or off) by name

These travel in the agent's :class:`~wakeful.agents.AgentRuntime` (``settings``), so a
workflow, a schedule and ``wakeful consolidate`` read the same ones. Unset, each is the
default it always was. Durations are seconds or text such as ``"90s"``, ``"10m"``,
``"1h"``, ``"2d"``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from wakeful.errors import ConfigError

__all__ = [
    "SETTINGS_TABLES",
    "RuntimeSettings",
    "check_redaction_rules",
    "parse_duration_setting",
    "settings_from_tables",
]

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
_TIMEDELTA = TypeAdapter(timedelta)


def parse_duration_setting(value: object) -> timedelta:
    """A duration from seconds (a number), text such as ``"10m"``, or a ``timedelta``."""
    if isinstance(value, timedelta):
        return value
    if isinstance(value, bool):
        raise ValueError(f"expected a duration such as '10m', '1h' or seconds, got {value!r}")
    if isinstance(value, int | float):
        return timedelta(seconds=value)
    if isinstance(value, str):
        m = _DURATION.match(value)
        if m:
            return timedelta(seconds=float(m.group(1)) * _UNIT_S[m.group(2)])
        try:  # ISO 8601 ("PT30M"): how a stored runtime spells it
            return _TIMEDELTA.validate_python(value)
        except ValidationError:
            pass
    raise ValueError(f"expected a duration such as '10m', '1h' or seconds, got {value!r}")


class RuntimeSettings(BaseModel):
    """The settings that are set (None: the default)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    consolidation_min_age: timedelta | None = Field(
        None, description="History younger than this stays raw (ConsolidationPolicy.min_age)."
    )
    consolidation_keep_events: int | None = Field(
        None, ge=0, description="The newest events are never consolidated."
    )
    summary_model: str | None = Field(
        None, min_length=1, description="The model that writes summaries."
    )
    keep_warm_calls: int | None = Field(
        None, ge=0, description="Keep-warm calls per idle period (0: never keep warm)."
    )
    handoff_after_idle: timedelta | None = Field(
        None,
        description="A session idle this long ends with a handoff note. Unset: after an "
        "hour, unless pacing prices continuing it cheaper than a handoff.",
    )
    handoff_model: str | None = Field(
        None, min_length=1, description="The model that writes the handoff note."
    )
    redaction: dict[str, bool] = Field(
        default_factory=dict, description="Redaction rules switched on or off, by name."
    )

    @field_validator("consolidation_min_age", mode="before")
    @classmethod
    def _min_age(cls, value: object) -> timedelta | None:
        if value is None:
            return None
        age = parse_duration_setting(value)
        if age < timedelta(0):
            raise ValueError("must not be negative (0 consolidates history of any age)")
        return age

    @field_validator("handoff_after_idle", mode="before")
    @classmethod
    def _idle(cls, value: object) -> timedelta | None:
        if value is None:
            return None
        idle = parse_duration_setting(value)
        if idle <= timedelta(0):
            raise ValueError("must be a positive duration")
        return idle

    def over(self, base: RuntimeSettings | None) -> RuntimeSettings:
        """These settings over ``base``'s: each one set here wins, redaction rule by rule."""
        if base is None:
            return self
        data = base.model_dump(exclude_none=True)
        mine = self.model_dump(exclude_none=True)
        redaction = {**data.pop("redaction", {}), **mine.pop("redaction", {})}
        return RuntimeSettings.model_validate({**data, **mine, "redaction": redaction})

    def is_empty(self) -> bool:
        return self == RuntimeSettings()


def check_redaction_rules(rules: Mapping[str, bool]) -> None:
    """Raise ValueError unless every name is a rule of the shipped redaction table (checked
    where settings are given, not where a runtime is read back: that is in workflows)."""
    from wakeful.redaction import default_policy

    known = {r.name for r in default_policy().rules}
    unknown = sorted(set(rules) - known)
    if unknown:
        raise ValueError(
            f"no redaction rule named {', '.join(unknown)} (known: {', '.join(sorted(known))})"
        )


# The policy file's tables and their keys -> the setting each one is.
SETTINGS_TABLES: dict[str, dict[str, str]] = {
    "consolidation": {
        "min_age": "consolidation_min_age",
        "keep_events": "consolidation_keep_events",
        "summary_model": "summary_model",
    },
    "pacing": {"keep_warm_calls": "keep_warm_calls", "handoff_after_idle": "handoff_after_idle"},
    "handoff": {"model": "handoff_model"},
}


def _field_of(table: str, key: str) -> str:
    return f"{table}.{key}"


def settings_from_tables(data: Mapping[str, Any]) -> RuntimeSettings | None:
    """The settings in a policy file's ``[consolidation]``, ``[pacing]``, ``[handoff]`` and
    ``[redaction]`` tables (None when it has none); a bad one is one :class:`ConfigError`
    line naming the table and key."""
    given: dict[str, Any] = {}
    where: dict[str, str] = {}
    for table, keys in (*SETTINGS_TABLES.items(), ("redaction", None)):
        if table not in data:
            continue
        values = data[table]
        if not isinstance(values, Mapping):
            raise ConfigError(f"{table}: expected a table of settings, got {values!r}")
        if keys is None:
            for rule, on in values.items():
                if not isinstance(on, bool):
                    raise ConfigError(f"redaction.{rule}: expected true or false, got {on!r}")
            try:
                check_redaction_rules(values)
            except ValueError as exc:
                raise ConfigError(f"redaction: {exc}") from None
            given["redaction"] = dict(values)
            where["redaction"] = "redaction"
            continue
        unknown = sorted(set(values) - set(keys))
        if unknown:
            raise ConfigError(
                f"{table}.{unknown[0]}: unknown setting; {table} takes {', '.join(keys)}"
            )
        for key, value in values.items():
            given[keys[key]] = value
            where[keys[key]] = _field_of(table, key)
    if not given:
        return None
    try:
        return RuntimeSettings.model_validate(given)
    except ValidationError as exc:
        err = exc.errors()[0]
        name = str(err["loc"][0]) if err["loc"] else ""
        raise ConfigError(
            f"{where.get(name, name)}: {err['msg'].removeprefix('Value error, ')}"
        ) from None
