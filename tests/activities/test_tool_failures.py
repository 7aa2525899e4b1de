"""A tool's own failures against the store's, against a real Postgres.

The tool's own failures count against its attempts and the model reads them, without host
paths or a database driver's words; the store's are raised for Temporal to retry (without
counting them, when the workflow counts the tool's attempts) and never recorded as the
tool's result; a tool that ran before the store failed is not run again.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
import sqlalchemy
from sqlalchemy import event
from temporalio.exceptions import ApplicationError

from tests.activities.test_tool_activity import _activities, _call, _env
from wakeful.activities.deps import ActivityDeps
from wakeful.activities.tools import RetryableToolError, ToolActivities
from wakeful.agents import Agent, AgentRegistry, Tool, ToolContext
from wakeful.compiler import EstimatingCounter
from wakeful.failures import exception_text, is_infrastructure, model_text
from wakeful.substrate.store import Store, TenantStore

NO_ARGS = {"type": "object", "properties": {}}
SOCKET_DIR = "/nonexistent/wakeful-test-socket-dir"


def _connection_error() -> psycopg.OperationalError:
    """A real driver error: connecting to a Postgres socket that is not there."""
    try:
        psycopg.connect(f"host={SOCKET_DIR} dbname=x user=x connect_timeout=2")
    except psycopg.OperationalError as exc:
        return exc
    raise AssertionError("connected to a socket that does not exist")


def test_connection_failures_are_the_stores_and_their_words_never_reach_the_model() -> None:
    exc = _connection_error()
    assert SOCKET_DIR in str(exc) and is_infrastructure(exc)
    engine = sqlalchemy.create_engine(f"postgresql+psycopg://x@/x?host={SOCKET_DIR}")
    with pytest.raises(sqlalchemy.exc.OperationalError) as wrapped:
        engine.connect()
    assert is_infrastructure(wrapped.value)
    for error in (exc, wrapped.value):
        text = exception_text(error)
        assert text == (
            "OperationalError: the database connection failed (the worker's log has the details)"
        )
    assert not is_infrastructure(ValueError("bad input"))
    try:
        raise RetryableToolError("upstream 503") from None
    except RetryableToolError as raised:
        assert not is_infrastructure(raised)


def test_host_paths_are_scrubbed_and_the_tools_own_directory_made_relative() -> None:
    text = (
        "[Errno 2] No such file or directory: '/srv/agents/ws/notes/a.md'; see /etc/ssl/certs "
        "and https://example.com/docs/errors and src/main.py"
    )
    assert model_text(text, "/srv/agents/ws") == (
        "[Errno 2] No such file or directory: 'notes/a.md'; see <path> "
        "and https://example.com/docs/errors and src/main.py"
    )
    assert model_text("socket /tmp/pg/.s.PGSQL.5432 failed") == "socket <path> failed"


def _agent_activities(store: Store, tenant: TenantStore, fn: Any, workdir: str) -> ToolActivities:
    agent = Agent(
        name="a1",
        instructions="x",
        tools=(Tool("probe", "Probe.", NO_ARGS, fn, timeout_s=60, heartbeat_s=5),),
        tenant=tenant.name,
        workdir=workdir,
    )
    deps = ActivityDeps(
        store=store,
        agents=AgentRegistry([agent]),
        providers=lambda name: None,  # type: ignore[arg-type,return-value]
        counter=EstimatingCounter(),
    )
    return ToolActivities(deps)


def test_a_tools_own_error_reaches_the_model_without_host_paths(
    store: Store, tenant: TenantStore, tmp_path: Path
) -> None:
    def probe(args: dict[str, Any], ctx: ToolContext) -> str:
        open(tmp_path / "ws" / "missing.txt").close()
        return "unreachable"

    (tmp_path / "ws").mkdir()
    activities = _agent_activities(store, tenant, probe, str(tmp_path / "ws"))
    out = _env().run(activities.run_tool, _call(tenant))
    (result,) = [e for e in tenant.events("a1") if e.kind == "tool_result"]
    assert out.is_error and result.text == (
        "FileNotFoundError: [Errno 2] No such file or directory: 'missing.txt'"
    )


def test_a_tools_own_database_failing_is_its_failure_in_a_line_without_the_drivers_words(
    store: Store, tenant: TenantStore
) -> None:
    def probe(args: dict[str, Any], ctx: ToolContext) -> str:
        raise _connection_error()

    out = _env().run(_activities(store, tenant, probe).run_tool, _call(tenant))
    (result,) = [e for e in tenant.events("a1") if e.kind == "tool_result"]
    assert out.is_error and SOCKET_DIR not in result.text
    assert result.text.startswith("OperationalError: the database connection failed")


def test_when_the_workflow_counts_a_tools_own_failure_comes_back_non_retryable(
    store: Store, tenant: TenantStore
) -> None:
    def probe(args: dict[str, Any], ctx: ToolContext) -> str:
        raise RetryableToolError("upstream 503 from /opt/upstream/bin/probe")

    activities = _activities(store, tenant, probe)
    inp = _call(tenant)
    counted = inp.model_copy(update={"tool_attempt": 1})
    with pytest.raises(ApplicationError) as raised:
        _env().run(activities.run_tool, counted)
    assert (raised.value.type, raised.value.non_retryable) == ("RetryableToolError", True)
    assert raised.value.message == "upstream 503 from <path>"
    # Runs that let Temporal count every attempt get the tool's error to retry, as before.
    with pytest.raises(RetryableToolError, match="upstream 503 from <path>"):
        _env().run(activities.run_tool, inp)


@contextmanager
def connection_killed_on_event_insert(store: Store) -> Iterator[list[int]]:
    """The first time a tool result is sent, its connection is terminated by the server
    (as a database restart does): the write fails with the driver's real error."""
    killed: list[int] = []

    def hook(conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if "INSERT INTO EVENTS" in statement.upper() and not killed:  # (with its blob)
            pid = conn.connection.dbapi_connection.info.backend_pid
            killed.append(pid)
            with store.engine.connect() as other:
                other.execute(sqlalchemy.text("SELECT pg_terminate_backend(:p)"), {"p": pid})

    event.listen(store.engine, "before_cursor_execute", hook)
    try:
        yield killed
    finally:
        event.remove(store.engine, "before_cursor_execute", hook)


def test_a_result_the_store_could_not_take_is_recorded_on_retry_without_running_the_tool(
    store: Store, tenant: TenantStore
) -> None:
    runs: list[int] = []

    def probe(args: dict[str, Any], ctx: ToolContext) -> str:
        runs.append(1)
        return "probe ok"

    activities = _activities(store, tenant, probe)
    inp = _call(tenant).model_copy(update={"tool_attempt": 1})
    with connection_killed_on_event_insert(store) as killed:
        # The store's failure is raised as it is, for Temporal to retry (not counted).
        with pytest.raises(sqlalchemy.exc.OperationalError) as raised:
            _env().run(activities.run_tool, inp)
    assert killed and is_infrastructure(raised.value)
    assert not [e for e in tenant.events("a1") if e.kind == "tool_result"]
    retry = _env().run(activities.run_tool, inp)
    (result,) = [e for e in tenant.events("a1") if e.kind == "tool_result"]
    assert (len(runs), retry.reused, result.text, result.is_error) == (
        1,
        False,
        "probe ok",
        False,
    )
