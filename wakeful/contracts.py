"""What crosses the Temporal boundary: one pydantic model in, one out, per activity.

Only ids, hashes and small numbers cross; windows, model outputs and tool results stay in the
substrate (claim-check). Fields are added, never reordered or renamed: running workflows
deserialize these.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, TypeVar

from pydantic import ConfigDict, Field, TypeAdapter, field_validator, model_validator

from wakeful.agents import AgentRuntime
from wakeful.compiler.blocks import Goal
from wakeful.errors import UserError
from wakeful.users import user_problem
from wakeful.wire import WireModel
from wakeful.workflows.pacing import CacheTtls as CacheTtls  # sent with each compile

T = TypeVar("T")

# Activity names are a wire contract.
START_WAKE = "wakeful.start_wake"
COMPILE = "wakeful.compile"
CALL_MODEL = "wakeful.call_model"
RECORD_OUTPUT = "wakeful.record_output"
RUN_TOOL = "wakeful.run_tool"
FINISH_WAKE = "wakeful.finish_wake"
RESUME_AGENT = "wakeful.resume_agent"
FIND_WAKE = "wakeful.find_wake"
END_SESSION = "wakeful.end_session"
KEEP_WARM = "wakeful.keep_warm"
DELIVER_TRIGGER = "wakeful.deliver_trigger"
RECORD_TOOL_RESULTS = "wakeful.record_tool_results"
CHILD_PLAN = "wakeful.child.plan"
CHILD_PREPARE = "wakeful.child.prepare"
CHILD_COLLECT = "wakeful.child.collect"
CHILD_MERGE = "wakeful.child.merge"

# The tool name the model uses to hand a narrow sub-task to a child agent; the workflow
# handles it (fan-out of child workflows), never ``run_tool``.
DELEGATE_TOOL = "delegate"


class _Msg(WireModel):
    model_config = ConfigDict(frozen=True)


class Trigger(_Msg):
    """Something that should wake an agent. ``idempotency_key`` makes delivery at-most-once."""

    goal: Goal
    idempotency_key: str
    new_session: bool = False
    received_at: datetime | None = None
    next_expected_at: datetime | None = Field(
        None,
        description="When the next trigger of this kind is expected (e.g. a schedule's "
        "next fire); lets the orchestrator price keep-warm calls against a cache miss.",
    )
    user: str | None = Field(
        None,
        description="The user the wake serves (wakeful.users): what it writes is stored "
        "with that user, and it reads agent-wide knowledge and that user's only. None: the "
        "agent's own wake, which reads agent-wide knowledge.",
    )

    @field_validator("user")
    @classmethod
    def _valid_user(cls, user: str | None) -> str | None:
        if user is not None and (problem := user_problem(user)) is not None:
            raise ValueError(problem)
        return user


# The largest trigger (as JSON) an agent accepts. Every trigger is written into the agent's
# workflow history, and a message this long already fills much of a model's window, so
# larger content belongs in the substrate (a document or file the agent reads), not in a
# message. 512 KiB is Temporal's per-payload warning size, and twice the webhook ingress's
# default body cap, so an accepted webhook (its payload pretty-printed) always fits.
MAX_TRIGGER_BYTES = 512 * 1024


def trigger_size(trigger: Trigger) -> int:
    """The trigger's size as it travels to the workflow (UTF-8 JSON)."""
    return len(trigger.model_dump_json().encode())


def oversized_trigger(trigger: Trigger, agent: str) -> str | None:
    """Why ``trigger`` is refused for being too large, or None when it fits."""
    size = trigger_size(trigger)
    if size <= MAX_TRIGGER_BYTES:
        return None
    return (
        f"the trigger {trigger.idempotency_key!r} for agent {agent!r} is {size:,} bytes; the"
        f" limit is {MAX_TRIGGER_BYTES:,} bytes (MAX_TRIGGER_BYTES). Store large content where"
        " the agent can read it (a file in its workdir, a document) and send a short message"
        " that points at it."
    )


# An agent's workflow id is this, its tenant, ':' and its name (wakeful.workflows.state).
AGENT_ID_PREFIX = "wakeful-agent:"


class WakeRef(_Msg):
    tenant: str
    agent: str
    wake_id: str
    session_id: str
    workflow_id: str
    number: int
    user: str | None = Field(
        None, description="The user the wake serves (its trigger's); None: the agent's own."
    )

    # A wake's id and its agent's workflow id follow from the other fields (for an agent's
    # wake; a child's workflow id does not): on the wire they are left out when they do.
    def _implied(self) -> dict[str, Any]:
        return {
            "wake_id": f"{self.agent}:{self.number}",
            "workflow_id": f"{AGENT_ID_PREFIX}{self.tenant}:{self.agent}",
        }

    @model_validator(mode="before")
    @classmethod
    def _implied_back(cls, data: Any) -> Any:
        if isinstance(data, dict) and {"tenant", "agent", "number"} <= data.keys():
            agent, tenant = data["agent"], data["tenant"]
            data = {
                "wake_id": f"{agent}:{data['number']}",
                "workflow_id": f"{AGENT_ID_PREFIX}{tenant}:{agent}",
                **data,
            }
        return data


class StartWakeIn(_Msg):
    wake: WakeRef
    goal: Goal
    idempotency_key: str
    started_at: datetime


class StartWakeOut(_Msg):
    ask_event_id: int


class LedgerAnnotations(_Msg):
    """Orchestrator decisions (e.g. pacing) the compile activity attaches to the ledger."""

    decisions: dict[str, str] = Field(default_factory=dict)
    notes: tuple[str, ...] = ()


class CompileIn(_Msg):
    wake: WakeRef
    runtime: AgentRuntime
    goal: Goal
    call_index: int
    now: datetime
    annotations: LedgerAnnotations | None = None
    ttls: CacheTtls | None = Field(
        None, description="TTLs that replace the policy's cache TTLs (None: the policy's)."
    )
    open: StartWakeIn | None = Field(
        None,
        description="Open the wake first (what start_wake does): sent with a wake's first "
        "compile, which always follows it, so the wake costs one step fewer.",
    )
    reminder: str | None = Field(
        None,
        description="A user turn recorded in the wake before it compiles: what the previous "
        "reply lacked (an agent with output_type answered in text, not by its answer tool).",
    )


class BreakpointRef(_Msg):
    """A cache breakpoint of a compiled window: enough for the orchestrator's cache clock."""

    name: str
    ttl: str | None
    prefix_tokens: int


class CompileOut(_Msg):
    window_hash: str
    stable_prefix_hash: str = Field(
        "",
        description="No longer sent ('', kept for histories that hold it): the workflow "
        "never reads it, and the compile record in the substrate has it.",
    )
    input_tokens: int
    max_event_id: int = Field(
        0, description="No longer sent (0), like ``stable_prefix_hash``: see the compile record."
    )
    breakpoints: tuple[BreakpointRef, ...] = ()
    fresh_tokens: int | None = Field(
        None,
        description="Tokens a fresh session would write after the stable prefix "
        "(Ledger.fresh_session_tokens); None from compiles that did not say.",
    )
    fresh_evidence_tokens: int | None = Field(
        None,
        description="Of fresh_tokens, the evidence each wake of a fresh session would bring "
        "back of this session (Ledger.fresh_session_evidence); None from compiles that did "
        "not say.",
    )
    spent_today_usd: float | None = Field(
        None,
        description="What the agent's model calls cost today (UTC, by workflow time), for "
        "its daily spend cap; None when it has none (not read).",
    )
    spent_today_tokens: int | None = Field(
        None, description="The tokens those calls used (input of every kind and output)."
    )
    consolidate: bool = Field(
        False,
        description="The window's history reached the policy's budget.consolidate_at (or a "
        "firing trigger's action is 'compact'): the agent's history is consolidated once the "
        "wake ends.",
    )
    handoff: str = Field(
        "",
        description="The firing trigger whose action is 'handoff': the session ends with a "
        "handoff note once the wake ends. '': none.",
    )
    intents_cost_usd: float = Field(
        0.0,
        description="What this compile's model call classifying the goal's intents cost "
        "(WAKEFUL_INTENT_CLASSIFIER=model); the wake adds it to its spend. 0: none made.",
    )


class CallModelIn(_Msg):
    wake: WakeRef
    provider: str = Field("", description="The provider to call (the registry's name).")
    runtime: AgentRuntime | None = Field(
        None, description="Older workflows sent the whole runtime; only its provider is read."
    )
    call_index: int
    window_hash: str
    at: datetime | None = Field(None, description="Workflow time the call was started.")
    record: bool = Field(
        False,
        description="Also append the reply to the transcript (text and tool calls, at "
        "``at``): what ``record_output`` does, without a step of its own.",
    )
    finish: bool = Field(
        False,
        description="When the reply calls no tools the wake ends with it: finish the wake "
        "here (status done, the handoff note: what finish_wake does), one step fewer.",
    )
    tool_calls: int = Field(0, description="Tool calls of the wake so far, for ``finish``.")


class ToolCallRef(_Msg):
    id: str
    name: str


# An answer travels in the agent workflow's history (a wake's result): a capped preview of
# the stored reply, whose blob holds all of it.
ANSWER_MAX_CHARS = 2000


class CallModelOut(_Msg):
    output_hash: str
    stop_reason: str
    tool_calls: tuple[ToolCallRef, ...] = ()
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cost_usd: float = 0.0
    handoff_id: int = Field(
        0, description="The handoff note's id when this call finished the wake (finish)."
    )
    answer: str = Field(
        "",
        description=f"A reply that calls no tools: its text, at most {ANSWER_MAX_CHARS} "
        "characters (the whole reply is the blob ``output_hash``).",
    )
    answer_chars: int = Field(0, description="Characters of the whole answer.")


class RecordOutputIn(_Msg):
    wake: WakeRef
    call_index: int
    output_hash: str
    at: datetime


class RecordOutputOut(_Msg):
    event_ids: tuple[int, ...]


class RunToolIn(_Msg):
    wake: WakeRef
    call_index: int
    output_hash: str
    tool_call: ToolCallRef
    at: datetime
    approved_by: str | None = Field(
        None,
        description="Who approved the call, for a tool that needs approval ('' when the "
        "decision named no one); recorded on its result.",
    )
    tool_attempt: int | None = Field(
        None,
        description="Which of the tool's own attempts this is, when the workflow counts them "
        "(the store's and the worker's failures are not counted, and the activity raises the "
        "tool's own non-retryable); None: Temporal counts every failed attempt.",
    )


class RunToolOut(_Msg):
    event_id: int
    result_hash: str
    is_error: bool
    reused: bool = Field(description="True when a retry found the result already recorded.")
    answer: str = Field(
        "",
        description=f"A valid call of the output tool (typed output): its result, at most "
        f"{ANSWER_MAX_CHARS} characters.",
    )
    answer_chars: int = Field(0, description="Characters of the whole answer.")


class FinishWakeIn(_Msg):
    wake: WakeRef
    goal: Goal
    status: str
    at: datetime
    model_calls: int
    tool_calls: int
    error: str = Field("", description="Why the wake failed (e.g. a refused model call).")


class FinishWakeOut(_Msg):
    handoff_id: int


class WakeResult(_Msg):
    wake_id: str
    number: int
    session_id: str
    status: str
    model_calls: int
    tool_calls: int
    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    cost_usd: float
    handoff_id: int
    idempotency_key: str = ""
    deduplicated: bool = False
    pacing: str = Field("", description="The pacing choice taken before this wake.")
    error: str = Field(
        "", description="Why the wake ended as it did when that was a failure (parked, ...)."
    )
    output: str = Field(
        "",
        description=f"The agent's answer: the text of the wake's last reply, at most "
        f"{ANSWER_MAX_CHARS} characters (a wake's result is kept in its workflow's history).",
    )
    output_truncated: bool = Field(False, description="The answer is longer than ``output``.")
    output_ref: str = Field(
        "",
        description="When the answer was cut: the stored reply holding all of it (a blob hash).",
    )
    output_by_query: bool = Field(
        False,
        description="The answer was left out of this result: the workflow's history holds "
        "it once already (the model call's or the output tool's result), so the wake update "
        "answers without it and the client reads it with the ``result`` query "
        "(RESULT_QUERY), which fills ``output``, ``output_truncated`` and ``output_ref``.",
    )

    @classmethod
    def without_calls(
        cls,
        idempotency_key: str,
        status: str,
        *,
        wake_id: str = "",
        session_id: str = "",
        handoff_id: int = 0,
    ) -> WakeResult:
        """The result of a trigger that made no model call (not run, rejected, a handoff):
        every counter and cost zero."""
        return cls(
            wake_id=wake_id,
            number=0,
            session_id=session_id,
            status=status,
            model_calls=0,
            tool_calls=0,
            input_tokens=0,
            output_tokens=0,
            cache_read_input_tokens=0,
            cache_creation_input_tokens=0,
            cost_usd=0.0,
            handoff_id=handoff_id,
            idempotency_key=idempotency_key,
        )

    def output_as(self, output_type: type[T]) -> T:
        """The typed answer of an agent with ``output_type``, validated again from
        ``output`` (the output tool's canonical JSON)."""
        if self.status != "done" and not self.output:
            why = f": {self.error}" if self.error else ""
            raise UserError(f"wake {self.number} ended {self.status}, without an answer{why}")
        if self.output_truncated:
            raise UserError(
                f"the answer of wake {self.number} is longer than a result carries; read it"
                " whole with `wakeful trigger --json` or from the wake's final_result event"
            )
        return TypeAdapter(output_type).validate_json(self.output)


# The agent workflow's query for a remembered wake result by its idempotency key (None when
# the workflow no longer remembers it): whole, with its answer.
RESULT_QUERY = "result"


def without_answer(result: WakeResult) -> WakeResult:
    """``result`` as the wake update returns it: its answer left for the ``result`` query."""
    if not result.output:
        return result
    return result.model_copy(
        update={
            "output": "",
            "output_truncated": False,
            "output_ref": "",
            "output_by_query": True,
        }
    )


def with_answer(result: WakeResult, kept: WakeResult | None) -> WakeResult:
    """The update's ``result`` with the answer the ``result`` query returned (``kept``).
    A workflow that no longer remembers the wake answers None: the result then says its
    answer is longer than it carries (``output_truncated``, no text)."""
    if not result.output_by_query:
        return result
    if kept is None or kept.wake_id != result.wake_id:
        return result.model_copy(update={"output_truncated": True, "output_by_query": False})
    return result.model_copy(
        update={
            "output": kept.output,
            "output_truncated": kept.output_truncated,
            "output_ref": kept.output_ref,
            "output_by_query": False,
        }
    )


# --- sessions, triggers and keep-warm ----------------------------------------------------


class ResumeAgentIn(_Msg):
    tenant: str
    agent: str
    recent: int = Field(32, description="How many recent wakes to return for deduplication.")


class FindWakeIn(_Msg):
    tenant: str
    agent: str
    idempotency_key: str


class FindWakeOut(_Msg):
    """The wake a trigger with this key started before, as its result; None: never woken."""

    result: WakeResult | None = None


class ResumeAgentOut(_Msg):
    """What a freshly started agent workflow recovers from the substrate."""

    wakes: int
    session_number: int
    session_id: str
    last_wake_at: datetime | None
    recent: tuple[WakeResult, ...] = ()
    search_attributes: bool = Field(
        False,
        description="The namespace has Wakeful's search attributes: the workflow tags itself "
        "(``workflows.search``).",
    )


class EndSessionIn(_Msg):
    wake: WakeRef = Field(description="The session's last wake.")
    reason: str
    at: datetime


class EndSessionOut(_Msg):
    handoff_id: int
    note: str = Field(default="template", description="Who wrote the note: model or template.")
    note_reason: str = ""
    cost_usd: float = Field(default=0.0, description="The note call's cost (0: no call).")


class KeepWarmIn(_Msg):
    wake: WakeRef = Field(description="The wake whose last window is re-sent.")
    runtime: AgentRuntime
    window_hash: str
    ping: int
    max_tokens: int = 1


class KeepWarmOut(_Msg):
    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    cost_usd: float


class DeliverTriggerIn(_Msg):
    runtime: AgentRuntime
    trigger: Trigger
    task_queue: str


class DeliverTriggerOut(_Msg):
    workflow_id: str


class ToolResultIn(_Msg):
    tool_call_id: str
    tool_name: str
    text: str
    is_error: bool = False


class RecordToolResultsIn(_Msg):
    wake: WakeRef
    call_index: int
    results: tuple[ToolResultIn, ...]
    at: datetime


class RecordToolResultsOut(_Msg):
    event_ids: tuple[int, ...]


# --- approvals -----------------------------------------------------------------------------

# The agent workflow's update that decides a call waiting for approval, and its query.
APPROVE_UPDATE = "approve"
APPROVALS_QUERY = "approvals"


class PendingApproval(_Msg):
    """A tool call waiting for a decision (the ``approvals`` query's answer)."""

    call_id: str
    tool: str
    wake_id: str
    reply_hash: str = Field(description="The stored reply holding the call's arguments.")
    requested_at: datetime
    deadline: datetime | None = Field(None, description="When the timeout policy applies.")
    on_timeout: str = "deny"


class ApprovalDecision(_Msg):
    """What a person decided about one call (the ``approve`` update's argument)."""

    call_id: str
    approved: bool
    reason: str = ""
    by: str = ""


# --- child agents --------------------------------------------------------------------------


class SpendCeiling(_Msg):
    """What a child may spend of its parent's spend caps: the parent's remainder when the
    child started (see ``wakeful.workflows.spend``). None: that kind of spend is not capped.
    Tokens count as ``max_tokens_per_day`` counts them: input of every kind and output."""

    usd: float | None = None
    usd_cap: str = Field("", description="The parent's cap ``usd`` is left of (its field).")
    tokens: int | None = None

    def less(self, usd: float, tokens: int) -> SpendCeiling:
        """What is left once ``usd`` and ``tokens`` more are spent."""
        return self.model_copy(
            update={
                "usd": None if self.usd is None else self.usd - usd,
                "tokens": None if self.tokens is None else self.tokens - tokens,
            }
        )


class ChildBundle(_Msg):
    """Everything a child agent gets: a narrow frame, never the parent's transcript."""

    tenant: str
    parent: str
    child: str = Field(description="The child's agent name: <parent>/child/<n>.")
    kind: str = Field(description="The parent's delegation this child serves.")
    call_id: str = Field(description="The parent's delegate tool call (or a caller's id).")
    task: str
    frame: str = Field(description="The child's instructions: task frame and output rules.")
    tools: tuple[str, ...] = Field(description="Allowlist of the parent's tool names.")
    subdir: str = ""
    output_schema: dict[str, Any]
    max_tokens: int
    max_model_calls: int
    timeout_s: float
    max_result_chars: int
    max_attempts: int
    on_invalid: Literal["retry", "report"]
    ceiling: SpendCeiling | None = Field(
        None,
        description="What the child may spend of its parent's spend caps, over all its "
        "attempts (None: its parent has no cap).",
    )
    user: str | None = Field(
        None, description="The user the parent's wake serves: the child's wakes serve it too."
    )


class ChildPlanIn(_Msg):
    wake: WakeRef
    call_index: int
    output_hash: str
    call_ids: tuple[str, ...]
    first_child: int = Field(description="Number of the first child: <parent>/child/<n>.")


class ChildPlanOut(_Msg):
    bundles: tuple[ChildBundle, ...]
    rejected: tuple[ToolResultIn, ...] = Field(
        (), description="Delegate calls whose arguments were refused, with the reason."
    )
    max_parallel: int = 3


class ChildPrepareIn(_Msg):
    bundle: ChildBundle


class ChildPrepareOut(_Msg):
    runtime: AgentRuntime


class ChildCollectIn(_Msg):
    bundle: ChildBundle
    wake_id: str


class ChildCollectOut(_Msg):
    ok: bool
    reason: str = ""
    result_hash: str = ""
    chars: int = 0


class ChildResult(_Msg):
    """A child's outcome as the parent sees it: a reference to a validated card, or why not."""

    child: str
    call_id: str
    kind: str
    status: Literal["ok", "rejected", "failed", "timed_out", "not_run"]
    reason: str = ""
    result_hash: str = ""
    chars: int = 0
    attempts: int = 0
    input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cost_usd: float = 0.0
    output_tokens: int = 0


class ChildMergeIn(_Msg):
    wake: WakeRef
    call_index: int
    results: tuple[ChildResult, ...]
    at: datetime


class ChildMergeOut(_Msg):
    memory_ids: tuple[int, ...]
    event_ids: tuple[int, ...]
