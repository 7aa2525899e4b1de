"""What a tool is, apart from any agent: its function, limits and context.

Shared by :mod:`wakeful.agents` (agents hold tools) and :mod:`wakeful.typed_tools` (tools
built from plain functions), so neither imports the other's module for it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal, TypedDict

from pydantic import BaseModel, Field

from wakeful.errors import UserError

__all__ = [
    "FINAL_RESULT",
    "LOCAL_TOOL_MAX_S",
    "Tool",
    "ToolContext",
    "ToolFn",
    "ToolOptions",
    "at_least",
    "check_approval",
    "positive",
]


class ToolContext(BaseModel):
    """What a tool learns about the call it serves (never the transcript)."""

    tenant: str
    agent: str
    wake_id: str
    tool_call_id: str
    workdir: str = Field(description="The directory file tools are confined to.")

    def heartbeat(self, *details: object) -> None:
        """Tell Temporal a long tool is alive; a silent tool is retried elsewhere."""
        from temporalio import activity

        if activity.in_activity():
            activity.heartbeat(*details)


# A tool's function: the model's arguments and the call's context in, the text the model
# reads out; or an awaitable of it (an ``async def`` tool), which the tool activity runs.
ToolFn = Callable[[dict[str, Any], ToolContext], str | Awaitable[str]]

FINAL_RESULT = "final_result"  # the output tool (wakeful.typed_tools.output_tool)

# The longest timeout a local tool may declare: Temporal's default workflow task timeout.
LOCAL_TOOL_MAX_S = 10.0


class ToolOptions(TypedDict, total=False):
    """How a tool runs, as ``@tool(...)`` and ``@agent.tool(...)`` take it: each key is the
    :class:`Tool` field of that name, with that field's default when left out."""

    timeout_s: float
    max_attempts: int
    local: bool
    heartbeat_s: float | None
    max_retries: int
    requires_approval: bool
    approval_timeout_s: float | None
    on_approval_timeout: Literal["deny", "park"]
    fresh_for: float | timedelta | None
    authoritative: bool


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_schema: dict[str, Any]
    fn: ToolFn
    # A call not returned by then (less a margin to record it: a quarter, at most 2 s) is an
    # error result the model sees, not retried; its thread is left running, not waited for.
    timeout_s: float = 60.0
    max_attempts: int = 3
    heartbeat_s: float | None = None
    # A quick tool (a file read, a lookup) may run as a Temporal local activity: inside the
    # workflow task, without the round trip through the server's task queue that a regular
    # activity costs. A local activity cannot heartbeat and should finish well within a
    # workflow task's timeout, so only short tools without heartbeats may.
    local: bool = False
    # Calls per wake the model may get wrong (invalid arguments, or the tool raising
    # ToolRetry) and be asked to correct; one more is answered with "do not call it again
    # in this wake", and later calls are refused without running the tool.
    max_retries: int = 2
    # A longer result is stored whole; the window gets its head and tail and a handle the
    # model pages through with the built-in ``read_result`` tool (wakeful.tool_results).
    # The agent's window caps it too, in tokens: a reply's results share a quarter of it.
    max_result_chars: int = 40_000
    # A person approves each call before it runs (``wakeful approve``): the wake waits for
    # the decision durably (no worker slot held), at most ``approval_timeout_s`` (None: as
    # long as it takes); then ``on_approval_timeout`` denies the call or parks the wake.
    requires_approval: bool = False
    approval_timeout_s: float | None = None
    on_approval_timeout: Literal["deny", "park"] = "deny"
    # How long a result describes the world (a deploy status, a queue length): past it, the
    # result in a later window becomes a one-line note asking the model to call again
    # (seconds or a timedelta; None: it never goes stale). ``compiler.live_output``.
    fresh_for: float | timedelta | None = None
    # Its results are the source of truth for what they describe: a copy from anywhere
    # else gives way to them when both are in a window (``compiler.dedupe``).
    authoritative: bool = False

    def __post_init__(self) -> None:
        where = f"tool {self.name!r}"
        if isinstance(self.fresh_for, timedelta):
            object.__setattr__(self, "fresh_for", self.fresh_for.total_seconds())
        if self.fresh_for is not None:
            positive(where, "fresh_for", self.fresh_for, "seconds (or a timedelta)")
        at_least(where, "max_attempts", self.max_attempts, 1)
        at_least(where, "max_retries", self.max_retries, 0)
        at_least(where, "max_result_chars", self.max_result_chars, 1_000)
        check_approval(where, self.approval_timeout_s, self.on_approval_timeout)
        positive(where, "timeout_s", self.timeout_s)
        if self.heartbeat_s is not None:
            positive(where, "heartbeat_s", self.heartbeat_s)
        if self.local and self.heartbeat_s is not None:
            raise UserError(
                f"tool {self.name!r}: a local tool cannot heartbeat; drop heartbeat_s or local"
            )
        if self.local and self.timeout_s > LOCAL_TOOL_MAX_S:
            raise UserError(
                f"tool {self.name!r}: a local tool must finish within {LOCAL_TOOL_MAX_S:g} s"
                f" (timeout_s={self.timeout_s:g}); run it as a regular activity (local=False)"
            )

    def schema(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }

    def spec(self) -> dict[str, Any]:
        """Its schema plus what a compile needs to know of its results (stored with the
        agent's spec; a tool without either keeps the entry, and the hash, it had)."""
        extra: dict[str, Any] = {}
        fresh = self.fresh_for
        if fresh is not None:
            extra["fresh_for_s"] = fresh.total_seconds() if isinstance(fresh, timedelta) else fresh
        if self.authoritative:
            extra["authoritative"] = True
        return self.schema() | extra


def at_least(where: str, field: str, value: object, low: int) -> None:
    """An integer limit of at least ``low``, or one line naming it."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise UserError(f"{where}: {field} must be an integer >= {low} (got {value!r})")


def check_approval(where: str, timeout_s: object, on_timeout: object) -> None:
    """An approval timeout (None, or seconds > 0) and its policy, or one line naming them."""
    if timeout_s is not None:
        positive(where, "approval_timeout_s", timeout_s, "seconds (or None: no timeout)")
    if on_timeout not in ("deny", "park"):
        raise UserError(
            f"{where}: on_approval_timeout must be 'deny' or 'park' (got {on_timeout!r})"
        )


def positive(where: str, field: str, value: object, unit: str = "") -> None:
    """A positive number (of seconds unless ``unit`` says), or one line naming it."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        of = f" of {unit}" if unit else ""
        raise UserError(f"{where}: {field} must be a number > 0{of} (got {value!r})")
