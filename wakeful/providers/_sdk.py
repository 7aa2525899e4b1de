"""Helpers shared by the SDK-backed providers (no SDK imports here)."""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from wakeful.errors import ProviderError

__all__ = [
    "RETRYABLE_STATUSES",
    "SdkProvider",
    "call_failed_error",
    "is_retryable_status",
    "retry_after_seconds",
    "split_body",
    "status_error",
    "unreachable_error",
]

RETRYABLE_STATUSES = frozenset({408, 409, 429})


def is_retryable_status(status: int) -> bool:
    """408/409/429 and every 5xx (Anthropic's 529 "overloaded" included) are transient."""
    return status in RETRYABLE_STATUSES or status >= 500


def status_error(
    provider: str,
    status: int,
    detail: str,
    *,
    kind: str | None = None,
    request_id: str | None,
    headers: Mapping[str, str] | None,
) -> ProviderError:
    """An HTTP error reply as a :class:`ProviderError`: retryable by status, honouring
    ``retry-after`` when it is, with the provider's request id to quote."""
    retryable = is_retryable_status(status)
    advice = "will retry" if retryable else "fix the request or credentials; not retried"
    what = f"{status} {kind}" if kind else str(status)
    return ProviderError(
        f"{provider} returned {what}: {detail} (request_id {request_id or 'unknown'}; {advice})",
        status=status,
        retryable=retryable,
        retry_after=retry_after_seconds(headers) if retryable else None,
    )


def unreachable_error(provider: str, exc: BaseException) -> ProviderError:
    """No reply at all (connection refused, timeout): retryable."""
    return ProviderError(
        f"{provider} unreachable: {exc} (check base_url and network; will retry)",
        retryable=True,
    )


def call_failed_error(provider: str, exc: BaseException) -> ProviderError:
    """Any other SDK failure (a malformed reply, …): not retryable."""
    return ProviderError(f"{provider} call failed: {exc!r}", retryable=False)


class _AsyncClient(Protocol):
    async def close(self) -> None: ...


ClientT = TypeVar("ClientT", bound=_AsyncClient)


class SdkProvider(ABC, Generic[ClientT]):
    """A provider over an official SDK's async client (``client_type``), built with the
    SDK's retries off: Temporal owns retries, so every attempt shows in workflow history and
    backoff is not stacked. The one exception: a request whose connection failed before any
    reply is sent again at once, once (``_sent``)."""

    client_type: Callable[..., ClientT]
    # The SDK's base exception, and the function that makes any of them a ProviderError.
    sdk_error: ClassVar[type[Exception]]
    # The SDK's error for a request that got no reply, and its subclass for one that ran
    # out of time (which is not sent again: see ``_sent``).
    connection_error: ClassVar[type[Exception]]
    timeout_error: ClassVar[type[Exception]]

    @staticmethod
    @abstractmethod
    def map_error(exc: BaseException) -> ProviderError: ...

    def __init__(
        self,
        api_key: str,
        *,
        base_url: str | None = None,
        timeout: float = 120.0,
        default_headers: dict[str, str] | None = None,
    ) -> None:
        self._client = self.client_type(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=0,
            default_headers=default_headers,
        )

    async def send(self, create: Callable[..., Awaitable[Any]], request: dict[str, Any]) -> Any:
        """The SDK's reply to ``request`` sent through ``create`` as given (``split_body``);
        an SDK failure leaves as the ProviderError ``map_error`` makes of it."""
        try:
            return await self._sent(create, split_body(create, request))
        except self.sdk_error as exc:
            raise self.map_error(exc) from exc

    async def events(
        self, create: Callable[..., Awaitable[Any]], request: dict[str, Any]
    ) -> AsyncIterator[Any]:
        """The events of ``request`` sent with streaming on (``"stream": true`` added to
        the body as given), as the SDK parses them; a failure, before or during the
        stream, leaves as the ProviderError ``map_error`` makes of it."""
        try:
            # Returns once the reply's headers are in: no event has been seen before it.
            stream = await self._sent(create, split_body(create, {**request, "stream": True}))
            async with stream:
                async for event in stream:
                    yield event
        except self.sdk_error as exc:
            raise self.map_error(exc) from exc

    async def _sent(self, create: Callable[..., Awaitable[Any]], arguments: dict[str, Any]) -> Any:
        """``create(**arguments)``, sent a second time at once when the first got no reply
        because its connection failed (not timed out).

        With the SDK's retries off, a keep-alive connection that the server closed while it
        sat idle in the client's pool fails the request it is picked for before any byte of
        a reply: no failure of the provider's, and one the SDKs retry themselves by default.
        Left to Temporal it would wait out the model call's retry interval; sent again here,
        on a fresh connection, it costs nothing more, and the caller sees one attempt (a
        failover route's accounting included). Nothing of the reply was seen: ``create``
        returns an unstreamed reply whole and a stream once its headers are in. A second
        failure, or any other, is the caller's.
        """
        try:
            return await create(**arguments)
        except self.connection_error as exc:
            if isinstance(exc, self.timeout_error):
                raise
        return await create(**arguments)

    async def aclose(self) -> None:
        await self._client.close()


_PARAMETERS: dict[Any, frozenset[str]] = {}


def _parameters(create: Callable[..., Any]) -> frozenset[str]:
    """The parameter names of an SDK method as called, remembered by its function (the same
    for every client): reading a signature costs far more than a call's other local work."""
    key = getattr(create, "__func__", create)
    held = _PARAMETERS.get(key)
    if held is None:
        held = _PARAMETERS[key] = frozenset(inspect.signature(create).parameters)
    return held


def split_body(create: Callable[..., Any], body: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments for an SDK ``create`` that send ``body`` byte-for-byte as given.

    Keys the installed SDK does not know as parameters travel in ``extra_body`` instead of
    raising ``TypeError``: the compiler's rendered body is the contract, not the SDK's
    signature of the day.
    """
    params = _parameters(create)
    known = {k: v for k, v in body.items() if k in params and k != "extra_body"}
    extra = {k: v for k, v in body.items() if k not in known}
    if extra:
        known["extra_body"] = extra
    return known


def retry_after_seconds(
    headers: Mapping[str, str] | None, now: datetime | None = None
) -> float | None:
    """Parse ``retry-after-ms`` / ``retry-after`` (seconds or an HTTP date)."""
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(float(millis) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - (now or datetime.now(UTC))).total_seconds(), 0.0)
