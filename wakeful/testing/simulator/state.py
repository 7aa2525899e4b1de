"""Clock, cache entries and the request-level error the simulator answers with.

Cache state is held per *scope* (the API key a request carries, standing in for a
provider organisation or workspace): caches are never shared across organisations, and
tests that use different keys cannot see each other's entries.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["CacheEntry", "CacheStore", "ManualClock", "OffsetClock", "SimError"]


class SimError(Exception):
    """A request the simulated provider refuses; rendered in that provider's error shape."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        kind: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind
        self.retry_after = retry_after


class ManualClock:
    """A clock that only moves when told to: tests advance TTLs without sleeping."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> float:
        with self._lock:
            self._now += seconds
            return self._now


class OffsetClock:
    """Wraps any clock and adds an offset, so a subprocess simulator can skip time."""

    def __init__(self, base: Callable[[], float] = time.time) -> None:
        self._base = base
        self._offset = 0.0
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self._base() + self._offset

    def advance(self, seconds: float) -> float:
        with self._lock:
            self._offset += seconds
        return self()


@dataclass
class CacheEntry:
    """One cached prefix. ``ttl`` is refreshed on every hit, as both providers do."""

    tokens: int
    ttl: float
    expires_at: float

    def live(self, now: float) -> bool:
        return now < self.expires_at

    def touch(self, now: float, ttl: float | None = None) -> None:
        self.ttl = max(self.ttl, ttl or 0.0)
        self.expires_at = max(self.expires_at, now + self.ttl)


@dataclass
class CacheStore:
    """Prefix-hash -> entry, with eviction counted so telemetry can report it."""

    entries: dict[bytes, CacheEntry] = field(default_factory=dict)
    evictions: int = 0

    def get(self, key: bytes, now: float) -> CacheEntry | None:
        entry = self.entries.get(key)
        if entry is None:
            return None
        if not entry.live(now):
            del self.entries[key]
            self.evictions += 1
            return None
        return entry

    def put(self, key: bytes, tokens: int, ttl: float, now: float) -> None:
        entry = self.get(key, now)
        if entry is None:
            self.entries[key] = CacheEntry(tokens=tokens, ttl=ttl, expires_at=now + ttl)
        else:
            entry.touch(now, ttl)

    def sweep(self, now: float) -> None:
        """Drop expired entries (bounded memory over long benchmark runs)."""
        dead = [k for k, e in self.entries.items() if not e.live(now)]
        for key in dead:
            del self.entries[key]
        self.evictions += len(dead)
