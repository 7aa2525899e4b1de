"""Secret redaction for text that comes from the world: tool output and webhook events.

A secret that reaches the substrate is copied into every window that includes it, into the
provider's logs and prompt cache, and into handoff notes; it cannot be taken back. So text
from tools and webhooks is redacted *before* it is stored or delivered, by a policy table
of rules — ``(name, pattern, replacement, enabled, requires)`` — applied in order. The default table
ships as ``wakeful/redaction.toml``; a team copies it and loads its own with
:meth:`RedactionPolicy.load`.

A rule's ``requires`` lists literals of which every match holds at least one (compared
ignoring case): a text holding none of them skips the rule's regex scan. Tool output is
often long and almost never holds a secret, so most rules cost one substring search
instead of a scan that tries the pattern at every position.

Redaction is deterministic and idempotent (a redacted text redacts to itself), so a retried
activity stores the same bytes and the compiler's hashes stay stable.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from wakeful.errors import ConfigError

__all__ = ["DEFAULT_POLICY_PATH", "Redacted", "RedactionPolicy", "RedactionRule", "default_policy"]

DEFAULT_POLICY_PATH = Path(__file__).with_name("redaction.toml")
# The only characters outside ASCII that ``re`` matches to an ASCII letter ignoring case.
_TO_ASCII = str.maketrans({"\u0130": "i", "\u0131": "i", "\u212a": "k", "\u017f": "s"})


def _folded(text: str) -> str:
    """``text`` in lower case, with the non-ASCII letters that ``re`` takes for ASCII ones
    under IGNORECASE made ASCII: a match of a case-insensitive rule folds to its literal."""
    return text.lower() if text.isascii() else text.translate(_TO_ASCII).lower()


@dataclass(frozen=True)
class RedactionRule:
    """One row of the policy table."""

    name: str
    pattern: str
    replacement: str
    enabled: bool = True
    # Literals (lower case) of which every match holds one; empty: the rule always scans.
    requires: tuple[str, ...] = ()
    _regex: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9_]*", self.name):
            raise ConfigError(
                f"redaction rule name {self.name!r} must be lower_snake_case (a-z, 0-9, _)"
            )
        try:
            regex = re.compile(self.pattern)
        except re.error as err:
            raise ConfigError(f"redaction rule {self.name!r}: bad pattern: {err}") from None
        if regex.search("") is not None:
            raise ConfigError(f"redaction rule {self.name!r} matches the empty string")
        try:
            regex.sub(self.replacement, "")  # `re` checks the template (groups, escapes) here
        except (re.error, IndexError) as err:
            raise ConfigError(f"redaction rule {self.name!r}: bad replacement: {err}") from None
        if any(not isinstance(x, str) or not x for x in self.requires):
            raise ConfigError(
                f"redaction rule {self.name!r}: requires must be a list of non-empty strings"
            )
        object.__setattr__(self, "requires", tuple(x.lower() for x in self.requires))
        object.__setattr__(self, "_regex", regex)

    def may_match(self, folded: str) -> bool:
        """False when ``folded`` (a text as :func:`_folded` gives it) cannot hold a match."""
        return not self.requires or any(x in folded for x in self.requires)

    @property
    def regex(self) -> re.Pattern[str]:
        return self._regex


@dataclass(frozen=True)
class Redacted:
    """A redacted text and how many replacements each rule made."""

    text: str
    counts: Mapping[str, int]

    @property
    def changed(self) -> bool:
        return bool(self.counts)

    def summary(self) -> str:
        """``rule=count`` pairs, sorted: what was removed, never what it was."""
        return ",".join(f"{name}={n}" for name, n in sorted(self.counts.items()))


@dataclass(frozen=True)
class RedactionPolicy:
    """An ordered table of rules; only enabled rules run."""

    rules: tuple[RedactionRule, ...]
    # The copies ``switched`` made, by the switches given: made once each.
    _switched: dict[tuple[tuple[str, bool], ...], RedactionPolicy] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        names = [r.name for r in self.rules]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ConfigError(f"redaction policy names rules more than once: {', '.join(dupes)}")

    def redact(self, text: str) -> Redacted:
        counts: dict[str, int] = {}
        folded = _folded(text)
        for rule in self.rules:
            if not rule.enabled or not rule.may_match(folded):
                continue
            text, n = rule.regex.subn(rule.replacement, text)
            if n:
                counts[rule.name] = n
                folded = _folded(text)
        return Redacted(text=text, counts=counts)

    def with_enabled(self, **enabled: bool) -> RedactionPolicy:
        """A copy with some rules switched on or off by name (``email=True``)."""
        known = {r.name for r in self.rules}
        unknown = sorted(set(enabled) - known)
        if unknown:
            raise ConfigError(
                f"no redaction rule named {', '.join(unknown)} (known: {', '.join(sorted(known))})"
            )
        return RedactionPolicy(
            tuple(replace(r, enabled=enabled.get(r.name, r.enabled)) for r in self.rules)
        )

    def switched(self, enabled: Mapping[str, bool]) -> RedactionPolicy:
        """:meth:`with_enabled`, remembered: an agent's settings (``Agent(redaction=...)``,
        its policy file's ``[redaction]``) switch rules of the worker's or the ingress's
        policy for every text of that agent; this policy itself when ``enabled`` is empty."""
        if not enabled:
            return self
        key = tuple(sorted(enabled.items()))
        held = self._switched.get(key)
        if held is None:
            held = self._switched[key] = self.with_enabled(**dict(key))
        return held

    @classmethod
    def from_rows(cls, rows: Iterable[Mapping[str, Any]]) -> RedactionPolicy:
        rules = []
        for i, row in enumerate(rows):
            extra = sorted(set(row) - {"name", "pattern", "replacement", "enabled", "requires"})
            missing = sorted({"name", "pattern", "replacement"} - set(row))
            if extra or missing:
                raise ConfigError(
                    f"redaction rule #{i + 1} ({row.get('name', '?')}): "
                    + (f"unknown keys {extra} " if extra else "")
                    + (f"missing keys {missing}" if missing else "")
                )
            enabled = row.get("enabled", True)
            if not isinstance(enabled, bool):
                raise ConfigError(f"redaction rule {row['name']!r}: enabled must be true or false")
            requires = row.get("requires", [])
            if not isinstance(requires, list | tuple):
                raise ConfigError(
                    f"redaction rule {row['name']!r}: requires must be a list of strings"
                )
            rules.append(
                RedactionRule(
                    name=str(row["name"]),
                    pattern=str(row["pattern"]),
                    replacement=str(row["replacement"]),
                    enabled=enabled,
                    requires=tuple(requires),
                )
            )
        return cls(tuple(rules))

    @classmethod
    def load(cls, path: Path) -> RedactionPolicy:
        """A policy from a TOML file of ``[[rule]]`` tables (see ``wakeful/redaction.toml``)."""
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except OSError as err:
            raise ConfigError(f"cannot read redaction policy {path}: {err.strerror}") from None
        except tomllib.TOMLDecodeError as err:
            raise ConfigError(f"redaction policy {path} is not valid TOML: {err}") from None
        rows = data.get("rule")
        if not isinstance(rows, list) or not rows:
            raise ConfigError(f"redaction policy {path} has no [[rule]] tables")
        return cls.from_rows(rows)


@cache
def default_policy() -> RedactionPolicy:
    """The shipped policy table (immutable, so one shared copy is safe)."""
    return RedactionPolicy.load(DEFAULT_POLICY_PATH)
