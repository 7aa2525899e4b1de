"""Reading a request's body within a limit, for every ingress route (webhooks, approvals)."""

from __future__ import annotations

from fastapi import Request

__all__ = ["Refused", "check_length", "read_body"]


class Refused(Exception):
    """A delivery answered with an error status (raised inside the handler, never escapes)."""

    def __init__(self, status: int, code: str, message: str, retry_after: int | None = None):
        super().__init__(message)
        self.status, self.code, self.message, self.retry_after = status, code, message, retry_after


def _too_large(limit: int) -> Refused:
    return Refused(413, "payload_too_large", f"body exceeds {limit} bytes; send a smaller event")


def check_length(request: Request, limit: int) -> None:
    """Refuse (413) a body whose announced length exceeds ``limit``, before reading it."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.strip().isdigit() and int(declared) > limit:
        raise _too_large(limit)


async def read_body(request: Request, limit: int) -> bytes:
    """The raw body, refusing (413) as soon as it is known to exceed ``limit`` bytes (the
    stream is counted, so an unannounced large body is cut off too)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)
