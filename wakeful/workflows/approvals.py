"""Tool calls waiting for a person's approval, inside an agent workflow.

A tool whose limits carry an :class:`~wakeful.agents.ApprovalPolicy` does not run when the
model calls it: the wake registers the call here and waits (``workflow.wait_condition``,
with the policy's timeout as a durable timer) until the ``approve`` update decides it. The
wait holds no worker slot and survives worker restarts: the workflow is replayed up to the
wait and goes on waiting. Only the call's id, tool name and the reply's hash are kept (and
shown by the ``approvals`` query); the arguments stay in the substrate's transcript.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from wakeful.contracts import ApprovalDecision, PendingApproval

__all__ = ["Approvals", "denial_text", "timeout_text"]


class Approvals:
    """The calls of the current wake that wait for a decision, and the decisions taken.

    Owned by the agent workflow (its update and query read it) and shared with the wake's
    cycle, which registers calls and waits for their decisions."""

    def __init__(self) -> None:
        self.pending: dict[str, PendingApproval] = {}
        self.decided: dict[str, ApprovalDecision] = {}

    def request(self, item: PendingApproval) -> None:
        self.pending[item.call_id] = item

    def decide(self, decision: ApprovalDecision) -> PendingApproval:
        """Record ``decision`` for a pending call; KeyError for a call that is not pending."""
        item = self.pending.pop(decision.call_id)
        self.decided[decision.call_id] = decision
        return item

    def take(self, call_id: str) -> ApprovalDecision | None:
        """The decision for ``call_id`` once taken (and forgotten here), else None."""
        return self.decided.pop(call_id, None)

    def drop(self, call_id: str) -> None:
        """Stop waiting for ``call_id`` (timed out, stopped): later decisions are refused."""
        self.pending.pop(call_id, None)
        self.decided.pop(call_id, None)

    def listing(self) -> list[PendingApproval]:
        return sorted(self.pending.values(), key=lambda p: (p.requested_at, p.call_id))


def denial_text(decision: ApprovalDecision) -> str:
    """What the model reads as the tool's result when a person denied the call."""
    who = decision.by or "a person"
    return f"denied by {who}: {decision.reason or 'no reason given'}"


def timeout_text(timeout: timedelta) -> str:
    return f"no decision within {timeout.total_seconds():g} s"
