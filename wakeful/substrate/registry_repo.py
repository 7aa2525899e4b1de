"""Writing the decision registry by key: record, supersede, retire, and expire by announcement.

:class:`RegistryRepo` works on one tenant's decisions, on the connection it is given (a unit
of work's: :mod:`wakeful.substrate.unit_of_work`). Every write bumps the agent's knowledge
revision first: that holds the agent's row lock until commit, so two writers on one key are
serialised — the second sees the first's decision live and supersedes it, never both live
at once.

A person's decision stands until a person changes it: the model's (or consolidation's)
decision on its key is stored as a proposal (``proposal_for``), never live, which a person
accepts (:meth:`RegistryRepo.accept_proposal`) or retires.

Nothing is deleted or overwritten: a superseded decision points at its successor, a retired
one says by whom and when, and an expired one is retired by the compile that first saw it
past its expiry (``retired_by = "expired@<compile step>"``), which names it in its ledger.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any, get_args

from sqlalchemy import Connection, and_, bindparam, exists, or_, select, update
from sqlalchemy.dialects.postgresql import insert

from wakeful.decisions import check_decision, check_decision_id
from wakeful.errors import UserError
from wakeful.substrate import schema as t
from wakeful.substrate.agents_repo import AgentsRepo
from wakeful.substrate.records import EXPIRED_BY, DecisionRecord, DecisionSource
from wakeful.substrate.revisions import (
    HORIZON_COLUMNS,
    Horizon,
    bump_revision,
    horizon,
    horizon_of,
)
from wakeful.substrate.tenant_repo import TenantRepo

__all__ = [
    "EXPIRED_ENTRY",
    "RegistryRepo",
    "UnknownDecisionError",
    "decision_row",
    "expiry_note",
    "registry_line",
]

# The ledger entry of a compile that retired decisions at their expiry.
EXPIRED_ENTRY = "registry.expired"

_SOURCES: tuple[str, ...] = get_args(DecisionSource)
_PERSON_ID = re.compile(r"^P-(\d+)$")
_d = t.decisions.c


class UnknownDecisionError(UserError):
    """No decision has that id (for that agent)."""


class RegistryRepo(TenantRepo):
    """One tenant's decision registry by key, on one connection."""

    def decision(self, agent: str, decision_id: str) -> DecisionRecord:
        """One registry entry (any state), or one line naming what is not there."""
        row = decision_row(self.conn, self.tenant, agent, decision_id)
        if row is None:
            raise UnknownDecisionError(
                f"agent {agent!r} has no decision {decision_id!r}; list them with"
                f" `wakeful decisions list {agent} --all`"
            )
        return _record(row)

    def record_decision(
        self,
        agent: str,
        *,
        key: str,
        text: str,
        source: DecisionSource = "person",
        rationale: str | None = None,
        decision_id: str | None = None,
        source_event: int | None = None,
        expires_at: datetime | None = None,
        replaces: str | None = None,
        user_id: str | None = None,
    ) -> DecisionRecord:
        """Register a decision under ``key`` (for ``user_id``'s wakes only, when given:
        ``wakeful.users``); the decisions current on that key (neither
        superseded nor retired), and ``replaces`` when given, are superseded by it, in the
        same transaction.

        With ``decision_id`` the write is idempotent: a retry finds the decision written and
        changes nothing (its first write already superseded the old one). Without, the id is
        the agent's next ``P-<n>``.

        What it may say is checked here (:func:`wakeful.decisions.check_decision`), for
        every writer alike, and the agent must exist: a bad write is one line naming what
        was wrong, and nothing is written.
        """
        key, text, rationale = check_decision(key, text, rationale)
        if decision_id is not None:
            check_decision_id(decision_id)
        if source not in _SOURCES:
            raise UserError(f"decision source {source!r} is not one of {', '.join(_SOURCES)}")
        if decision_id is not None:  # a retry returns before it moves the revision
            done = decision_row(self.conn, self.tenant, agent, decision_id)
            if done is not None:
                return _record(done)
        AgentsRepo(self.conn, self.tenant).get_agent(agent)  # an unknown agent: one line
        rev = bump_revision(self.conn, self.tenant, agent)  # the agent's lock: writers queue
        if decision_id is None:
            decision_id = _next_person_id(self.conn, self.tenant, agent)
        else:  # written by a concurrent attempt while this one waited for the lock
            done = decision_row(self.conn, self.tenant, agent, decision_id)
            if done is not None:
                return _record(done)
        # A key is one decision per scope: a user's decision replaces only that user's on
        # it, and the agent-wide one holds for the others.
        on_key = or_(
            and_(_d.key == key, _d.user_id.is_not_distinct_from(user_id)),
            _d.decision_id == (replaces or decision_id),
        )
        current = and_(_d.superseded_by.is_(None), _d.retired_at.is_(None))
        # A person's decision stands until a person changes it: another writer's decision
        # on its key is a proposal (named after it), and the person's entry stays live. An
        # agent-wide person's decision binds every user's wakes too.
        person = None
        if source != "person":
            binding = or_(
                and_(_d.key == key, or_(_d.user_id.is_(None), _d.user_id == user_id)),
                _d.decision_id == (replaces or decision_id),
            )
            person = self.conn.execute(
                select(_d.decision_id)
                .where(_d.tenant == self.tenant, _d.agent == agent, binding, current)
                .where(_d.proposal_for.is_(None), _d.source == "person")
                .order_by(_BY_ID)
            ).scalar()
        self.conn.execute(
            insert(t.decisions).values(
                tenant=self.tenant,
                agent=agent,
                decision_id=decision_id,
                key=key,
                text=text,
                rationale=rationale,
                source=source,
                source_event=source_event,
                expires_at=expires_at,
                recorded_rev=rev,
                proposal_for=person,
                user_id=user_id,
            )
        )
        # What this decision replaces: for a proposal, the earlier proposals on the key (a
        # newer one stands for them); otherwise everything current on it, proposals too (a
        # person's decision on the key settles them).
        replaced = update(t.decisions).where(_d.tenant == self.tenant, _d.agent == agent)
        if person is not None:
            replaced = replaced.where(_d.proposal_for.is_not(None))
        self.conn.execute(
            replaced.where(on_key, current, _d.decision_id != decision_id).values(
                superseded_by=decision_id, superseded_rev=rev
            )
        )
        row = decision_row(self.conn, self.tenant, agent, decision_id)
        assert row is not None
        return _record(row)

    def supersede_with(
        self,
        agent: str,
        decision_id: str,
        *,
        text: str,
        rationale: str | None = None,
        source: DecisionSource = "person",
        at: datetime | None = None,
    ) -> DecisionRecord:
        """Replace a decision current at ``at`` (default: now) with a new one on its key (a
        decision written without a key, e.g. by consolidation, lends its id as the key)."""
        old = self.decision(agent, decision_id)
        _require_current(old, at or datetime.now(UTC))
        return self.record_decision(
            agent,
            key=old.key or old.decision_id,
            text=text,
            source=source,
            rationale=rationale,
            replaces=old.decision_id,
        )

    def accept_proposal(
        self, agent: str, decision_id: str, *, at: datetime | None = None
    ) -> DecisionRecord:
        """A person takes a proposal (current at ``at``, default now) as their decision:
        a person's decision with its key, text and rationale, which supersedes the
        decision it was proposed over and the proposal itself."""
        proposal = self.decision(agent, decision_id)
        when = at or datetime.now(UTC)
        if proposal.status(when) != "proposed":
            _require_current(proposal, when)  # names what it is instead
            raise UserError(f"decision {decision_id!r} is live, not a proposal; nothing to accept")
        assert proposal.key is not None  # proposals are made on a key
        return self.record_decision(
            agent,
            key=proposal.key,
            text=proposal.text,
            rationale=proposal.rationale,
            source="person",
            replaces=proposal.decision_id,
        )

    def retire_decision(
        self, agent: str, decision_id: str, *, by: str = "person", at: datetime | None = None
    ) -> DecisionRecord:
        """End a decision current at ``at`` (default: now) without a successor."""
        at = at or datetime.now(UTC)
        rev = bump_revision(self.conn, self.tenant, agent)
        row = decision_row(self.conn, self.tenant, agent, decision_id)
        if row is None:
            self.decision(agent, decision_id)  # raises, naming it
        assert row is not None
        _require_current(_record(row), at, proposal=True)  # a proposal declined, too
        self.conn.execute(
            update(t.decisions)
            .where(_d.tenant == self.tenant, _d.agent == agent, _d.decision_id == decision_id)
            .values(retired_at=at, retired_by=by, retired_rev=rev)
        )
        row = decision_row(self.conn, self.tenant, agent, decision_id)
        assert row is not None
        return _record(row)

    def expire_decisions(self, agent: str, at: datetime, *, step: str) -> list[DecisionRecord]:
        """Retire the decisions past their expiry at ``at`` on behalf of the compile ``step``,
        and return those it retired — on a retry of the step, those its first attempt did,
        so the compile's ledger names them however often it runs.

        Why expiry is kept, but announced, rather than dropped for explicit retirement only:
        an expiry is often part of what was said ("freeze merges for the next 3 days",
        "until 2027-01-31"), and a rule kept past the horizon it was given for is as wrong as
        one lost early. What was wrong was its silence: a decision vanished from the window
        with no trace of when or why. Retiring it here makes the expiry a recorded fact (a
        revision, ``retired_by``) that the ledger and ``wakeful decisions list --all`` show.
        """
        params = {"t": self.tenant, "a": agent, "at": at, "by": f"{EXPIRED_BY}{step}"}
        # One read on every compile: what is due now, or was retired by this step before.
        rows = self.conn.execute(_DUE_OR_MINE, params).all()
        if any(r.retired_by is None for r in rows):  # the revision moves only then
            rev = bump_revision(self.conn, self.tenant, agent)
            self.conn.execute(_EXPIRE, params | {"r": rev})
            rows = self.conn.execute(_MINE, params).all()
        return [_record(r) for r in rows]

    def expire_then_horizon(
        self, agent: str, at: datetime, *, step: str
    ) -> tuple[list[DecisionRecord], Horizon]:
        """:meth:`expire_decisions`, then the snapshot's horizon
        (:func:`~wakeful.substrate.revisions.horizon`) as it stands after it. When no
        decision is due and none was retired by this step (every compile but a few), one
        statement reads that and the horizon together, at one point in time."""
        params = {"t": self.tenant, "a": agent, "at": at, "by": f"{EXPIRED_BY}{step}"}
        due, *bounds = self.conn.execute(
            _DUE_AND_HORIZON, params | {"tenant": self.tenant, "agent": agent}
        ).one()
        if not due:
            return [], horizon_of(bounds)
        expired = self.expire_decisions(agent, at, step=step)
        return expired, horizon(self.conn, self.tenant, agent)


# Built once, with bound parameters: the compile runs the first on every call.
# (Parameter names are not column names: an UPDATE reserves those for its SET clause.)
_AGENT = and_(_d.tenant == bindparam("t"), _d.agent == bindparam("a"))
_DUE = and_(_d.superseded_by.is_(None), _d.retired_at.is_(None), _d.expires_at <= bindparam("at"))
_BY = _d.retired_by == bindparam("by")
_BY_ID = _d.decision_id.collate("C")  # by code point, as knowledge.live_decisions sorts
_DUE_OR_MINE = select(t.decisions).where(_AGENT, or_(_DUE, _BY)).order_by(_BY_ID)
_MINE = select(t.decisions).where(_AGENT, _BY).order_by(_BY_ID)
_DUE_AND_HORIZON = select(exists().where(_AGENT, or_(_DUE, _BY)), *HORIZON_COLUMNS)
# Valid time: a decision stopped holding at its expiry, not when a compile noticed.
_EXPIRE = (
    update(t.decisions)
    .where(_AGENT, _DUE)
    .values(retired_at=_d.expires_at, retired_by=bindparam("by"), retired_rev=bindparam("r"))
)


def _require_current(d: DecisionRecord, at: datetime, *, proposal: bool = False) -> None:
    state = d.status(at)
    if state == "superseded":
        raise UserError(f"decision {d.decision_id!r} is already superseded by {d.superseded_by!r}")
    if state == "proposed" and not proposal:
        raise UserError(
            f"decision {d.decision_id!r} is a proposal over {d.proposal_for!r}, not a live"
            f" decision; accept it (`wakeful decisions accept`) or retire it"
        )
    if state not in ("live", "proposed"):
        raise UserError(f"decision {d.decision_id!r} is already {state}")


def decision_row(conn: Connection, tenant: str, agent: str, decision_id: str) -> Any:
    """The row of ``decision_id`` (any state), or None."""
    return conn.execute(
        select(t.decisions).where(
            _d.tenant == tenant, _d.agent == agent, _d.decision_id == decision_id
        )
    ).first()


def _next_person_id(conn: Connection, tenant: str, agent: str) -> str:
    ids = conn.execute(
        select(_d.decision_id).where(
            _d.tenant == tenant, _d.agent == agent, _d.decision_id.like("P-%")
        )
    ).scalars()
    numbers = [int(m.group(1)) for i in ids if (m := _PERSON_ID.match(i))]
    return f"P-{max(numbers, default=0) + 1}"


def _record(row: Any) -> DecisionRecord:
    m = row._mapping
    return DecisionRecord.model_validate({k: m[k] for k in m.keys() if k != "tenant"})


def expiry_note(expired: list[DecisionRecord]) -> str:
    """The ledger's ``registry.expired`` entry: each decision, its key and its expiry."""
    return "; ".join(
        f"{d.decision_id}"
        + (f" (key {d.key})" if d.key else "")
        + (f" expired {d.expires_at.isoformat()}" if d.expires_at else "")
        + f": {d.text[:80]}"
        for d in expired
    )


def registry_line(d: DecisionRecord) -> str:
    """A decision as the window's registry shows it: ``[id] text``, and for one written
    under a key, the key first (so the model can record a successor on it) and its
    rationale after. Decisions without either render as they always have."""
    key = f"{d.key}: " if d.key else ""
    why = f" (why: {d.rationale})" if d.rationale else ""
    pending = (
        f" (proposed, pending a person: {d.proposal_for} is a person's decision and holds"
        " until a person accepts this)"
        if d.proposal_for
        else ""
    )
    return f"[{d.decision_id}] {key}{d.text}{why}{pending}"
