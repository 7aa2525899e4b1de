"""Snapshot tails kept between compiles: a compile reads only the events appended since.

Every compile of a session loads the session's raw tail (``TenantStore.recent_events``):
hundreds of events, most of a compile's substrate time, though between two compiles only a
few were appended. Events are append-only, and the one change an event row ever sees is its
retirement, which bumps the agent's knowledge revision and stamps the row's ``retired_rev``.
So a tail read after the caller read revision ``R`` stays exact while no event has been
retired at a revision above ``R``. A cached tail is reused when

* no event of the agent was retired after it was read (one lookup in a partial index),
* the caller reads at ``R`` or later and up to the cached ``max_id`` or beyond, and
* the session's count of events up to the new ``max_id`` is the cached count plus the
  events appended after the cached ``max_id`` (an event committed late, with a lower id
  than one already read, fails this);

otherwise the tail is read afresh. Either way the answer is what ``recent_events`` gives.

Entries are bounded by the characters of event text they hold, least recently used first
out, and are shared by the worker's activity threads.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from wakeful.compiler.blocks import Block
from wakeful.substrate.events_repo import EventsRepo
from wakeful.substrate.records import StoredEvent
from wakeful.substrate.sized_lru import SizedLRU
from wakeful.substrate.store import TenantStore
from wakeful.substrate.tail import tail_start

__all__ = ["TailCache"]

_Key = tuple[str, str, str, int, int]


@dataclass(frozen=True)
class _Tail:
    max_id: int
    total: int  # the session's events with ids up to max_id, retired ones included
    events: tuple[StoredEvent, ...]  # the tail: from ordinal tail_start(total, ...) on
    revision: int  # the knowledge revision the caller read before these rows were read
    chars: int
    cacheable: bool = True
    # Compiler blocks made of these events, by event id, with the event each was made of.
    blocks: dict[int, tuple[StoredEvent, Block]] = field(default_factory=dict)


class TailCache:
    """``store.recent_events`` with memory: ``cache.read(store, ...)``."""

    def __init__(self, max_chars: int = 64_000_000) -> None:
        self.entries: SizedLRU[_Key, _Tail] = SizedLRU(max_chars, lambda e: e.chars)
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def read(
        self,
        store: TenantStore,
        agent: str,
        *,
        max_id: int,
        limit: int,
        session_id: str | None,
        page: int,
        revision: int | None,
        last_retired: int | None = None,
    ) -> tuple[list[StoredEvent], dict[int, tuple[StoredEvent, Block]] | None]:
        """What ``store.recent_events`` returns, and the blocks already made of the tail's
        events (``event id -> (event, block)``) for the caller to reuse and fill; None when
        it is not kept. ``revision`` is the knowledge revision the caller read before this
        call (None: not read, so nothing is cached); ``last_retired`` the revision at which
        an event of the agent was last retired (0: never), when the caller read it with
        ``revision`` in one statement (None: this call reads it)."""
        if session_id is None or page == 1 or revision is None:
            events = store.recent_events(
                agent, max_id=max_id, limit=limit, session_id=session_id, page=page
            )
            return events, None
        key = (store.name, agent, session_id, limit, page)
        cached = self.entries.get(key)
        with store.unit() as uow:  # one transaction: the checks and the reads agree
            at = _At(uow.events, agent, session_id, max_id, limit, page)
            entry = None
            if cached is not None and _usable(cached, at, revision, last_retired):
                entry = _extend(cached, at)
            hit = entry is not None
            if entry is None:
                entry = _read(at, revision)
        with self._lock:
            self.hits += hit
            self.misses += not hit
        if not entry.cacheable:
            self.entries.discard(key)
            return list(entry.events), None
        self.entries.put(key, entry)
        return list(entry.events), entry.blocks


@dataclass(frozen=True)
class _At:
    """One read of a session's tail: the events it reads through, and where."""

    events: EventsRepo
    agent: str
    session_id: str
    max_id: int
    limit: int
    page: int


def _usable(cached: _Tail, at: _At, revision: int, last_retired: int | None) -> bool:
    if at.max_id < cached.max_id or revision < cached.revision:
        return False
    # Read with the revision or now: a retirement committed since has a revision above
    # the caller's, which it reads as not retired, as the cached rows have it.
    last = at.events.last_retired_revision(at.agent) if last_retired is None else last_retired
    return last is None or last <= cached.revision


def _extend(cached: _Tail, at: _At) -> _Tail | None:
    """The cached tail and the events appended after it, or None when they do not add up."""
    if at.max_id == cached.max_id:
        return cached
    after, total = at.events.session_events_after_counted(
        at.agent, at.session_id, after_id=cached.max_id, max_id=at.max_id
    )
    new = tuple(after)
    if total != cached.total + len(new):
        return None  # an event with a lower id committed after the cached read
    keep = total - tail_start(total, at.limit, at.page)
    events = (cached.events + new)[len(cached.events) + len(new) - keep :]
    first = events[0].id if events else at.max_id + 1
    blocks = {i: b for i, b in cached.blocks.items() if i >= first}
    chars = sum(len(e.text) for e in events)
    return _Tail(at.max_id, total, events, cached.revision, chars, blocks=blocks)


def _read(at: _At, revision: int) -> _Tail:
    events = tuple(
        at.events.recent_events(
            at.agent, max_id=at.max_id, limit=at.limit, session_id=at.session_id, page=at.page
        )
    )
    total = at.events.session_count(at.agent, at.session_id, max_id=at.max_id)
    if len(events) != total - tail_start(total, at.limit, at.page):
        # An event committed late between the two reads: answer, but remember nothing.
        return _Tail(at.max_id, total, events, revision, 0, cacheable=False)
    return _Tail(at.max_id, total, events, revision, sum(len(e.text) for e in events))
