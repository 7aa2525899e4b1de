"""The tool activity: run one tool call of a stored model reply and record its result.

A tool raising :class:`RetryableToolError` is retried by Temporal under the tool's own retry
policy; any other exception becomes an error result the model sees (so it can recover). A
retry that finds the result already recorded returns it without running the tool again.

A tool raising :class:`~wakeful.typed_tools.ToolRetry` (a typed tool does when the model's
arguments do not validate) asks the model, not Temporal, to try again: its message is an
error result. Those results are marked, and counted per tool and wake: past the tool's
``max_retries`` the model is told to stop calling it, and later calls are refused unrun, so
a model that cannot get the arguments right costs a bounded number of calls.

Cancellation is not a tool failure. Temporal cancels a running tool when its workflow is
gone (a child past its timeout), its heartbeat lapses or the worker shuts down, by raising
:class:`~temporalio.exceptions.CancelledError` in the activity's thread, which raises it in
the tool's thread too: that is re-raised, and nothing is recorded, so a retry on another
worker runs the tool again instead of reading back "cancelled" as its result. (A tool
blocked in a system call cannot take the exception; its thread is left running, and counted,
as below.) The substrate reads and writes are shielded, so a cancellation arriving during
one is raised once it has finished, never inside the database driver.

A tool must return within its timeout. Python cannot stop a thread, so the tool runs in a
thread of its own (:mod:`wakeful.activities.tool_thread`) and the activity waits for it
until the attempt's deadline, less a margin to record the outcome. A tool that has not
returned by then becomes an error result the model sees ("did not return within N s"), not
retried: the activity's slot is freed and its thread left running, and once
``MAX_LEFT_RUNNING`` calls of one tool are left running in this worker, further calls of it
are refused at once. Whatever such a tool returns later is dropped (and logged). Tools that
touch files go through :mod:`wakeful.files`, which never opens anything that blocks.

Tool output is untrusted: it is redacted (``wakeful.redaction``) before it is stored, so no
secret a tool read reaches the substrate, a window or a handoff note. It is stored as a
tool result, which the compiler renders as a provider tool-result block under the system
prompt's notice that tool results are data, never instructions.
"""

from __future__ import annotations

import threading
import traceback
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError, CancelledError

from wakeful.activities.deps import ActivityDeps
from wakeful.activities.tool_thread import (
    LEFT_RUNNING,
    MAX_LEFT_RUNNING,
    Key,
    LeftRunning,
    ToolThread,
    budget_s,
)
from wakeful.activities.wake import step_key
from wakeful.agents import FINAL_RESULT, Agent, Tool, ToolContext
from wakeful.compiler.blocks import Goal, content_hash
from wakeful.compiler.triggers import task_of
from wakeful.contracts import ANSWER_MAX_CHARS, RUN_TOOL, RunToolIn, RunToolOut
from wakeful.decisions import REMEMBER_DECISION, parse_remember
from wakeful.errors import StoreError, UserError
from wakeful.failures import exception_text, is_infrastructure, model_text
from wakeful.mcp_tools import McpConnectionError, McpPool, server_of
from wakeful.providers.base import ModelReply
from wakeful.redaction import RedactionPolicy, default_policy
from wakeful.skills import LOAD_SKILL, SKILL_META, SKILL_TASK_META, answer_load_skill
from wakeful.substrate.pg_safe import pg_text
from wakeful.substrate.records import EventIn
from wakeful.substrate.store import TenantStore
from wakeful.tool_results import (
    CAPPED_META,
    HANDLE_METAS,
    READ_RESULT,
    RESULT_BLOB_META,
    Count,
    page,
    result_token_cap,
    shorten,
)
from wakeful.typed_tools import ToolRetry


class RetryableToolError(Exception):
    """Raise from a tool for a transient failure that Temporal should retry."""


class _ToolStuck(Exception):
    """The tool did not return in time, or too many calls of it have not: an error result
    the model sees, never retried (a retry would only strand another thread)."""


class ToolActivities:
    def __init__(
        self,
        deps: ActivityDeps,
        redaction: RedactionPolicy | None = None,
        left_running: LeftRunning = LEFT_RUNNING,
    ) -> None:
        self.deps = deps
        self.redaction = redaction if redaction is not None else default_policy()
        self.left_running = left_running
        self.unrecorded = Unrecorded()

    @staticmethod
    def _page(
        ts: TenantStore, agent: str, args: dict[str, Any], max_tokens: int, count: Count
    ) -> tuple[bool, str]:
        """``read_result``: a page of one of the agent's own stored tool results (is_error,
        text). A handle is a blob's hash, and the tenant's blobs hold every agent's windows
        and prompts: only a hash that one of this agent's tool results names is read."""
        handle, offset = args.get("handle"), args.get("offset", 0)
        if not isinstance(handle, str) or not isinstance(offset, int) or offset < 0:
            return True, "read_result needs handle (a string) and offset (an integer >= 0)"
        missing = (
            f"read_result: no such result: no tool result of yours has the handle {handle!r};"
            " use the handle a shortened result's note names"
        )
        with ts.unit() as uow:
            if not uow.events.holds_result(agent, handle, HANDLE_METAS):
                return True, missing
            try:
                text = uow.blobs.get_blob(handle)
            except StoreError:
                return True, missing
        return False, page(text, offset, max_tokens=max_tokens, count=count)

    @staticmethod
    def _remember(ts: TenantStore, inp: RunToolIn, args: dict[str, Any]) -> tuple[bool, str]:
        """``remember_decision``: register the decision under its key (is_error, text).

        Its id is derived from the call's event (``DEC-<event>``), so a retry of the
        activity finds the decision its first attempt wrote and writes nothing twice."""
        wake, call = inp.wake, inp.tool_call
        try:
            parsed = parse_remember(args)
        except UserError as exc:
            return True, str(exc)
        called = ts.event_by_step(step_key(wake, inp.call_index, "call", call.id))
        if called is None:  # the model call records its tool calls before any runs
            return True, f"remember_decision: the call {call.id} is not recorded; call it again"
        rec = ts.record_decision(
            wake.agent,
            key=parsed.key,
            text=parsed.text,
            rationale=parsed.rationale,
            source="tool",
            decision_id=f"DEC-{called.id}",
            source_event=called.id,
            # A wake for a user records the decision for that user's wakes only.
            user_id=wake.user,
        )
        if rec.proposal_for is not None:  # a person's decision holds the key
            return False, (
                f"Recorded {rec.decision_id} under key {rec.key!r} as a proposal: the"
                f" decision on that key, {rec.proposal_for}, is a person's and holds until a"
                " person changes it. A person will see your proposal and may accept it."
            )
        replaced = [
            d.decision_id
            for d in ts.all_decisions(wake.agent)
            if d.superseded_by == rec.decision_id
        ]
        return False, (
            f"Recorded {rec.decision_id} under key {rec.key!r}"
            + (f"; it replaces {', '.join(replaced)}" if replaced else "")
            + ". It stays in your context until it is replaced or retired."
        )

    def _run_in_thread(
        self, key: Key, fn: Callable[[], str | Awaitable[str]], timeout_s: float
    ) -> str:
        """Run ``fn`` in a thread of its own and wait for it until shortly before
        ``timeout_s``, the tool's own timeout."""
        name = key[2]
        stuck = self.left_running.count(key)
        if stuck >= MAX_LEFT_RUNNING:
            raise _ToolStuck(
                f"{name} not run: {stuck} earlier calls of it are still running past their"
                " timeout in this worker; make the tool return within its timeout_s (give a"
                " blocking call a timeout of its own) and restart the worker"
            )
        budget = budget_s(timeout_s)
        run = ToolThread(name, fn)
        try:
            # Inside the try: a cancellation may land in this thread while it waits for
            # the tool's thread to start, by which time the tool may be running.
            run.start()
            returned = run.wait(budget)
        except CancelledError:
            with activity.shield_thread_cancel_exception():
                if run.abandon(cancelled=True):
                    self.left_running.add(key, run.thread)
            raise
        if not returned and run.abandon(cancelled=False):
            self.left_running.add(key, run.thread)
            raise _ToolStuck(
                f"{name} did not return within {budget:g} s; it was left running and will"
                " not be retried"
            )
        return run.outcome()

    @activity.defn(name=RUN_TOOL)
    def run_tool(self, inp: RunToolIn) -> RunToolOut:
        counted = inp.tool_attempt is not None  # the workflow counts the tool's own attempts
        try:
            return self._run_tool(inp)
        except CancelledError:
            raise
        except RetryableToolError as exc:  # the tool's own failure: its message is redacted
            if counted:
                raise ApplicationError(
                    model_text(str(exc)), type=type(exc).__name__, non_retryable=True
                ) from None
            raise RetryableToolError(model_text(str(exc))) from None
        except Exception as exc:
            if is_infrastructure(exc):
                # The store failed, not the tool: retried (without limit, and not counted,
                # when the workflow counts), and never recorded as the tool's result.
                activity.logger.warning(
                    "tool %s: the store failed (%s); the call is retried",
                    inp.tool_call.name,
                    type(exc).__name__,
                )
                raise
            if not counted:
                raise
            # Counted by the workflow, and read by the model once they run out: in words fit
            # for it (without the exception's chain, which Temporal would carry along).
            activity.logger.warning(
                "tool %s: %s", inp.tool_call.name, traceback.format_exc(limit=-3)
            )
            raise ApplicationError(
                exception_text(exc), type=type(exc).__name__, non_retryable=True
            ) from None

    def _run_tool(self, inp: RunToolIn) -> RunToolOut:
        wake, call = inp.wake, inp.tool_call
        ts = self.deps.store.tenant(wake.tenant)
        key = step_key(wake, inp.call_index, "result", call.id)
        # Two transactions (read, then write), none held while the tool runs.
        with activity.shield_thread_cancel_exception(), ts.unit() as uow:
            # The wake's events, retired ones too: the result this step recorded, if an
            # earlier attempt did (its step key is unique in the tenant and names this
            # wake), is one of them, so one read serves the retry's check and the count.
            wake_events = uow.events.events(wake.agent, wake_id=wake.wake_id)
            e = next((e for e in wake_events if e.step_key == key), None)
            if e is not None:
                self.unrecorded.pop(key)
                return RunToolOut(
                    event_id=e.id,
                    result_hash=e.content_hash,
                    is_error=e.is_error,
                    reused=True,
                    **_answer(call.name, e.text, e.is_error),
                )
            # The reply, from the worker's cache when this worker stored it.
            output = self.deps.replies.get((ts.name, inp.output_hash))
            if output is None:
                output = uow.blobs.get_blob(inp.output_hash)
            reply = ModelReply.model_validate_json(output)
            # This tool's calls the model got wrong earlier in this wake: the tool calls of
            # a wake run one at a time, so each call counts those recorded before it.
            wrong = sum(
                1
                for e in wake_events
                if e.kind == "tool_result" and e.tool_name == call.name and e.meta.get("retry")
            )
        # A tool that ran in this worker but whose result the store could not take (it was
        # down) is not run again: its outcome is recorded now.
        done = self.unrecorded.get(key)
        if done is None:
            done = self._call(inp, reply, wrong)
            self.unrecorded.put(key, done)
        with activity.shield_thread_cancel_exception(), ts.unit() as uow:
            # The whole result as a blob, stored with its event (one statement).
            (result_hash,), blob = uow.blobs.blob_rows([("tool_result", done.whole)])
            (event,) = uow.events.append_events(
                wake.agent,
                [
                    EventIn(
                        step_key=key,
                        kind="tool_result",
                        role="user",
                        text=done.shown,
                        session_id=wake.session_id,
                        wake_id=wake.wake_id,
                        tool_call_id=call.id,
                        tool_name=call.name,
                        is_error=done.is_error,
                        event_time=inp.at,
                        meta=done.meta | {RESULT_BLOB_META: result_hash},
                        user_id=wake.user,
                    )
                ],
                blob,
            )
        self.unrecorded.pop(key)
        return RunToolOut(
            event_id=event.id,
            result_hash=result_hash,
            is_error=event.is_error,
            reused=False,
            **_answer(call.name, event.text, event.is_error),
        )

    def _redaction(self, agent: Agent) -> RedactionPolicy:
        """The worker's redaction policy with the agent's rules switched on or off
        (``Agent(redaction={"email": True})`` or its policy file's ``[redaction]``)."""
        settings = agent.settings()
        return self.redaction.switched(settings.redaction if settings is not None else {})

    def _call(self, inp: RunToolIn, reply: ModelReply, wrong: int) -> _Outcome:
        """Run the call (a built-in tool, an MCP server's or the agent's own) and make its
        result as it is recorded: redacted, and shortened for the window."""
        wake, call = inp.wake, inp.tool_call
        ts = self.deps.store.tenant(wake.tenant)
        args = next(c.input for c in reply.tool_calls if c.id == call.id)
        agent = self.deps.agents.get(wake.tenant, wake.agent)
        # The reply's results share a part of the agent's window, in its tokens: a result
        # of the current wake is never evicted, so one larger than the window parks the wake.
        window = self.deps.policy(agent.policy).budget.input_budget
        max_tokens = result_token_cap(window, len(reply.tool_calls))
        count = self.deps.counter.count
        ctx = ToolContext(
            tenant=wake.tenant,
            agent=wake.agent,
            wake_id=wake.wake_id,
            tool_call_id=call.id,
            workdir=agent.workdir,
        )
        is_error = retry = in_tool = False
        with self.deps.telemetry.tool_span(
            call.name,
            call.id,
            wake=(wake.tenant, wake.wake_id),
            agent=wake.agent,
            conversation_id=wake.session_id,
            arguments=args,
        ) as span:
            limit = DEFAULT_RESULT_CHARS
            extra: dict[str, str] = {}
            try:
                if call.name == READ_RESULT:
                    raise _Paged(self._page(ts, wake.agent, args, max_tokens, count))
                if call.name == REMEMBER_DECISION and agent.decisions:
                    raise _Paged(self._remember(ts, inp, args))
                skills = self.deps.skills_for(agent) if call.name == LOAD_SKILL else ()
                if skills and all(t.name != LOAD_SKILL for t in agent.tools):
                    failed, answer, loaded = answer_load_skill(skills, args)
                    if loaded is not None:  # the durable record: the skill stays loaded
                        extra[SKILL_META] = loaded
                        task = _task_of_call(ts, wake.wake_id, inp.call_index)
                        if task:  # ...while the task class stays (compiler.triggers)
                            extra[SKILL_TASK_META] = task
                    raise _Paged((failed, answer))
                mcp = _mcp_tool(self.deps.mcp, agent, call.name, (wake.tenant, wake.wake_id))
                tool = mcp or agent.get_tool(call.name)
                limit = tool.max_result_chars
                if wrong > tool.max_retries:
                    raise _ToolStuck(
                        f"{call.name} not run: the model called it wrongly {wrong} times in"
                        f" this wake, more than its max_retries={tool.max_retries}; do not"
                        " call it again in this wake"
                    )
                in_tool = True  # from here on, an exception is the tool's own
                text = self._run_in_thread(
                    (wake.tenant, wake.agent, call.name),
                    lambda: tool.fn(args, ctx),
                    tool.timeout_s,
                )
            except CancelledError:
                raise
            except _Paged as paged:
                is_error, text = paged.is_error, paged.text
            except ToolRetry as exc:
                is_error = retry = True
                text = _retry_text(call.name, str(exc), wrong, tool.max_retries)
            except _ToolStuck as stuck:
                is_error = True
                text = str(stuck)
                activity.logger.warning("tool %s: %s", call.name, text)
            except RetryableToolError as exc:
                # Its message reaches Temporal's history and, once retries run out, the
                # model: redacted like any other tool output, without host paths.
                message = model_text(self._redaction(agent).redact(str(exc)).text, agent.workdir)
                raise RetryableToolError(message) from None
            except Exception as exc:  # the model sees the failure and can recover
                if not in_tool and is_infrastructure(exc):
                    raise  # the store failed under a built-in tool: not the tool's failure
                is_error = True
                text = exception_text(exc, agent.workdir)
                # The innermost frames: the outer ones are the thread plumbing.
                activity.logger.info(
                    "tool %s failed: %s", call.name, traceback.format_exc(limit=-2)
                )
            self.deps.telemetry.record_tool(span, is_error=is_error, output=text)
        redacted = self._redaction(agent).redact(text)
        whole = pg_text(redacted.text)  # what the store keeps, and its handle
        shown = shorten(whole, limit, content_hash(whole), max_tokens=max_tokens, count=count)
        meta = (
            ({CAPPED_META: str(len(whole))} if len(shown) < len(whole) else {})
            | ({"retry": "1"} if retry else {})
            | extra
            # who let a call that needs approval run: the audit trail
            | ({APPROVED_BY: inp.approved_by} if inp.approved_by is not None else {})
            | ({"redacted": redacted.summary()} if redacted.changed else {})
        )
        return _Outcome(whole=whole, shown=shown, is_error=is_error, meta=meta)


def _task_of_call(ts: TenantStore, wake_id: str, call_index: int) -> str:
    """The task class of the goal the model call was compiled for (as classified), "" when
    it had none or no compile of it is found."""
    with ts.unit() as uow:
        compiled = [c for c in uow.wakes.compiles(wake_id) if c.call_index <= call_index]
    if not compiled:
        return ""
    goal = max(compiled, key=lambda c: c.call_index).goal
    return task_of(Goal.model_validate(goal))


APPROVED_BY = "approved_by"  # a tool result's meta: who approved the call ('' for no name)
DEFAULT_RESULT_CHARS = 40_000  # Tool.max_result_chars' default, for a call of no tool


@dataclass(frozen=True)
class _Outcome:
    """A call's result as it is recorded: whole (stored as a blob), as the window shows it,
    and its event's meta (less the blob's hash)."""

    whole: str
    shown: str
    is_error: bool
    meta: dict[str, str]


class Unrecorded:
    """Outcomes of calls that ran in this worker and are not recorded yet, by step key: a
    retry after the store failed to take one records it instead of running the tool again.
    Bounded: past ``MAX_UNRECORDED`` the oldest is dropped (its call then runs again)."""

    def __init__(self) -> None:
        self._outcomes: OrderedDict[str, _Outcome] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> _Outcome | None:
        with self._lock:
            return self._outcomes.get(key)

    def put(self, key: str, outcome: _Outcome) -> None:
        with self._lock:
            self._outcomes[key] = outcome
            while len(self._outcomes) > MAX_UNRECORDED:
                self._outcomes.popitem(last=False)

    def pop(self, key: str) -> None:
        with self._lock:
            self._outcomes.pop(key, None)


MAX_UNRECORDED = 256


class _Paged(Exception):
    """The built-in read_result's answer."""

    def __init__(self, answer: tuple[bool, str]) -> None:
        super().__init__(answer[1])
        self.is_error, self.text = answer


def _answer(tool: str, text: str, is_error: bool) -> dict[str, Any]:
    """A valid call of the output tool is the wake's answer: a capped copy comes back."""
    if tool != FINAL_RESULT or is_error:
        return {}
    return {"answer": text[:ANSWER_MAX_CHARS], "answer_chars": len(text)}


def _mcp_tool(pool: McpPool, agent: Agent, name: str, wake: tuple[str, str]) -> Tool | None:
    """A call of one of the agent's MCP servers' tools, as a tool under the server's limits
    (None: ``name`` is not an MCP tool). A dropped session is retried by Temporal; the
    server's own error (``McpCallError``) is the model's to read, as any tool's."""
    server = server_of(agent, name)
    if server is None:
        return None

    def call(args: dict[str, Any], ctx: ToolContext) -> str:
        try:
            return pool.call(agent, name, args, wake, heartbeat=ctx.heartbeat)
        except McpConnectionError as exc:
            raise RetryableToolError(str(exc)) from None

    return Tool(
        name=name,
        description="",
        input_schema={},
        fn=call,
        timeout_s=server.timeout_s,
        max_attempts=server.max_attempts,
        heartbeat_s=server.heartbeat_s,
    )


def _retry_text(name: str, message: str, wrong_before: int, max_retries: int) -> str:
    """A :class:`ToolRetry`'s message as the model reads it: what was wrong, and whether it
    may call the tool again in this wake (``wrong_before`` calls of it already went wrong)."""
    left = max_retries - wrong_before
    if left > 0:
        return f"{message}\nCorrect this and call {name} again ({left} more tries in this wake)."
    return (
        f"{message}\n{name} went wrong {wrong_before + 1} times in this wake, more than its"
        f" max_retries={max_retries}: do not call it again in this wake; go on without it."
    )
