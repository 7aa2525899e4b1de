"""The unit consolidation reads: one event of the log, or one summary being rolled up."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict


class SpanItem(BaseModel):
    """What the rules, the prompt and the gate need to know about one piece of history.

    ``kind`` is the event kind (``turn``, ``tool_call``, ``tool_result``, ``evidence``) or
    ``summary``;
    ``id`` is the event id, or the summary id for a summary.
    """

    model_config = ConfigDict(frozen=True)

    id: int
    kind: str
    text: str
    at: datetime
    role: str | None = None
    session_id: str | None = None
    wake_id: str | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None

    @property
    def from_user(self) -> bool:
        return self.kind == "turn" and self.role == "user"

    @property
    def label(self) -> str:
        """How the item is cited in prompts: ``e12`` for events, ``s3`` for summaries."""
        return f"s{self.id}" if self.kind == "summary" else f"e{self.id}"
