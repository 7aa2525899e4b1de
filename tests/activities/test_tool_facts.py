"""What a tool says about its results reaches the compile: ``Tool(fresh_for=...,
authoritative=...)`` into the stored spec, and from there onto each result's block."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from wakeful.activities.snapshot_input import with_tool_facts
from wakeful.compiler import Block, BlockKind, Role
from wakeful.errors import UserError
from wakeful.tool_spec import Tool
from wakeful.typed_tools import tool

AT = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@tool(fresh_for=timedelta(minutes=10), authoritative=True)
def deploy_status(service: str) -> str:
    """The current deploy of a service."""
    return service


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return path


def _result(n: int, tool_name: str) -> Block:
    return Block(
        id=f"ev:{n}", kind=BlockKind.TOOL_RESULT, text="out", source=f"events:{n}", seq=n,
        role=Role.USER, tool_call_id=f"tc-{n}", tool_name=tool_name, captured_at=AT,
    )  # fmt: skip


def test_the_spec_carries_fresh_for_and_authoritative_only_when_set() -> None:
    assert deploy_status.spec() == deploy_status.schema() | {
        "fresh_for_s": 600.0,
        "authoritative": True,
    }
    assert read_file.spec() == read_file.schema()  # an agent's spec hash is unchanged
    assert Tool("t", "d", {}, read_file.fn, fresh_for=90).spec()["fresh_for_s"] == 90


def test_a_fresh_for_that_is_not_positive_is_one_line() -> None:
    with pytest.raises(UserError) as err:
        tool(fresh_for=0)(lambda path: path)
    assert "fresh_for must be a number > 0 of seconds (or a timedelta) (got 0)" in str(err.value)


def test_each_result_of_the_tool_gets_its_stale_after_and_authority() -> None:
    events = [_result(1, "deploy_status"), _result(2, "read_file")]
    out = with_tool_facts(events, [deploy_status.spec(), read_file.spec()])
    assert out[0].stale_after == AT + timedelta(minutes=10) and out[0].authoritative
    assert out[1] is events[1]
    assert with_tool_facts(events, [read_file.spec()]) is events
