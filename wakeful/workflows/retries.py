"""Retry policies and timeouts, one per kind of activity.

* Substrate reads and writes (start/finish a wake, compile, record, merge, end a session)
  are short and idempotent on their step key: they run as *local* activities, in the
  worker that runs the workflow task, and retry freely. A local activity costs no server
  round trip and leaves one marker event instead of three activity events plus a workflow
  task — most of a wake's history and most of its overhead otherwise. After a crash a
  local activity may run again; its step key makes the second run find the first write.
* Model calls retry what the provider says is transient (408/409/429/5xx) and wait at least
  its ``retry-after`` (the activity raises ``ApplicationError(next_retry_delay=...)``); a 400
  is raised non-retryable and fails at once, ending the wake with ``model_error``. A model
  call heartbeats while it runs: one on a worker that died is retried on another once its
  heartbeats stop for ``MODEL_HEARTBEAT``, not after its whole ``MODEL_TIMEOUT``.
* Tools retry under their own limits (``ToolLimits``): ``max_attempts`` counts the tool's
  own failures only; the store's and the worker's are retried without limit
  (``TOOL_INFRA_RETRY``). Long tools heartbeat. Model calls, tools, keep-warm calls and
  trigger deliveries are ordinary activities: any worker may run them, and each attempt is
  visible in the history.
* An agent may ask for its model calls to run as local activities (``local_model_calls``),
  under the same timeout and retry policy: a wake then costs no task-queue round trip per
  call (less latency, about half the server's work per wake). What it gives up: the call's
  attempts are one marker in the history instead of an event each; while a long call runs,
  the worker holds the workflow task (heartbeating it), so queries and signals are answered
  at the heartbeats; and a worker that dies mid-call leaves the call to be run again by the
  next worker (a reply already stored is reused, never paid for twice), once the workflow
  task's own timeout has passed: a local activity has no heartbeat timeout of its own.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.common import RetryPolicy

__all__ = [
    "COMPILE_TIMEOUT",
    "DELIVER_RETRY",
    "DELIVER_TIMEOUT",
    "DETERMINISTIC_ERRORS",
    "KEEP_WARM_RETRY",
    "KEEP_WARM_TIMEOUT",
    "MODEL_HEARTBEAT",
    "MODEL_RETRY",
    "MODEL_TIMEOUT",
    "STORE_RETRY",
    "STORE_TIMEOUT",
    "TOOL_INFRA_RETRY",
    "tool_backoff",
    "tool_retry",
]

# Errors that no retry can fix (a bad policy, load-bearing blocks that cannot fit, an agent
# that is not registered, malformed data): the wake is parked with the error instead of being
# retried forever. Outages (a database or server going away) stay retryable without limit:
# the wake stalls and resumes when they return.
DETERMINISTIC_ERRORS = [
    "BudgetError",
    "ConfigError",
    # Postgres refused a value (out of range, invalid text): the same write fails again.
    # Matched by class name, which is how Temporal names a Python exception's failure type.
    "DataError",
    "PolicyError",
    "UnknownAgentError",
    "UserError",
    "ValidationError",
]

STORE_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    maximum_interval=timedelta(seconds=30),
    non_retryable_error_types=DETERMINISTIC_ERRORS,
)
STORE_TIMEOUT = timedelta(seconds=30)
COMPILE_TIMEOUT = timedelta(seconds=60)

MODEL_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=2),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(minutes=2),
    maximum_attempts=8,
)
MODEL_TIMEOUT = timedelta(minutes=5)
# Temporal retries a model call (on any worker) once its heartbeats have stopped this long:
# a tenth of MODEL_TIMEOUT, which a call on a dead worker would otherwise hold the wake for.
# Not shorter: the SDK sends a heartbeat at most every 0.8 of this (24 s), and a call taken
# for dead while it still runs is paid for twice; a stalled event loop must not look dead.
MODEL_HEARTBEAT = timedelta(seconds=30)

# A keep-warm call is worth less than its retries: one attempt, a short timeout.
KEEP_WARM_RETRY = RetryPolicy(maximum_attempts=1)
KEEP_WARM_TIMEOUT = timedelta(seconds=60)

DELIVER_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=30)
)
DELIVER_TIMEOUT = timedelta(seconds=30)


def tool_retry(max_attempts: int) -> RetryPolicy:
    """A tool's retries as runs without the ``TOOL_ATTEMPTS`` patch make them: every failed
    attempt counts, the store's and the worker's too."""
    return RetryPolicy(
        initial_interval=timedelta(seconds=1),
        maximum_interval=timedelta(seconds=30),
        maximum_attempts=max_attempts,
    )


# A tool call's retries of the store's and the worker's failures (a database outage, a worker
# that died mid-call: the attempt times out): without limit, like the substrate steps', and
# never counted against the tool's ``max_attempts``. The tool's own failures come back
# non-retryable (the activity marks them so: ``wakeful.failures``), and the workflow retries
# them itself, ``TOOL_BACKOFF`` apart, up to the tool's ``max_attempts``.
TOOL_INFRA_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=0,
    non_retryable_error_types=[*DETERMINISTIC_ERRORS, "RetryableToolError"],
)


def tool_backoff(failed: int) -> timedelta:
    """The wait before a tool's next attempt once ``failed`` attempts failed (1 s, doubling,
    at most 30 s: what ``tool_retry`` waits)."""
    return timedelta(seconds=min(2 ** (failed - 1), 30))
