"""A Postgres of a test's own, which the test may stop and start again on the same data."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from wakeful.worker.settings import load_settings
from wakeful.worker.stack import EmbeddedStack


@contextmanager
def stoppable_postgres(temporal_address: str) -> Iterator[EmbeddedStack]:
    """An embedded stack whose only embedded piece is Postgres (Temporal is at the address).

    Call ``up()`` to start it. Its data lives in a directory of its own, not under pytest's
    temporary root: every pytest session that starts on the machine resets that root's mode
    to 0700, and a Postgres running as its own account that can no longer reach its data
    directory panics at shutdown (pg_control: Permission denied), leaving a lock file that
    blocks the restart. The caller clears ``WAKEFUL_*`` variables first.
    """
    root = Path(tempfile.mkdtemp(prefix="wkpgs"))
    stack = EmbeddedStack(
        load_settings(state_dir=root / "state", temporal_address=temporal_address)
    )
    try:
        yield stack
    finally:
        stack.down()
        shutil.rmtree(root, ignore_errors=True)
