"""Every error Wakeful raises on purpose.

    WakefulError
    ├── UserError                  developer misuse: bad config, bad policy, unknown agent
    │   ├── ConfigError            a setting is missing or malformed
    │   ├── PolicyError            a compile policy failed validation
    │   └── UnknownAgentError      no agent of that name is registered
    └── RuntimeFailure             the world misbehaved: retry, or report
        ├── BudgetError            load-bearing blocks cannot fit the window
        ├── StackError             an embedded server would not start or is dead
        ├── StoreError             the substrate refused or lost a connection
        └── ProviderError          a model provider failed (retryable or not)

Messages name the ids involved and say what to do.
"""

from __future__ import annotations


class WakefulError(Exception):
    """Base of every Wakeful error."""


class UserError(WakefulError):
    """The caller used Wakeful wrongly; retrying will not help."""


class ConfigError(UserError):
    pass


class PolicyError(UserError):
    pass


class UnknownAgentError(UserError):
    pass


class RuntimeFailure(WakefulError):
    """Something outside the caller's control failed."""


class BudgetError(RuntimeFailure):
    """Load-bearing blocks do not fit the declared budget. Never a silent drop."""

    def __init__(self, message: str, block_ids: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.block_ids = block_ids


class StackError(RuntimeFailure):
    pass


class StoreError(RuntimeFailure):
    pass


class ProviderError(RuntimeFailure):
    """A provider call failed. ``retryable`` and ``retry_after`` drive Temporal's retry."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after
