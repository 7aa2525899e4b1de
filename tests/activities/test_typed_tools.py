"""Tools built from functions: the schema the model reads, the arguments it may send wrong,
and the text it reads back.

Golden schemas live in ``tool_schemas/``; regenerate with ``WAKEFUL_UPDATE_SNAPSHOTS=1``
(and read the diff: every byte of a tool's schema is sent on every model call).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from datetime import date
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Literal

import jsonschema
import pytest
from pydantic import BaseModel, Field

import wakeful
from wakeful import Agent, Tool, ToolContext, ToolRetry, tool
from wakeful.errors import UserError
from wakeful.typed_tools import result_text

GOLDEN = Path(__file__).parent / "tool_schemas"


class Severity(StrEnum):
    low = "low"
    high = "high"


class Window(BaseModel):
    """A span of time, both ends included."""

    start: date
    end: date | None = Field(None, description="Open-ended when missing.")


class Query(BaseModel):
    service: str
    window: Window
    tags: list[str] = []


@tool
def nested_model(query: Query, limit: int = 10) -> str:
    """Search the deploy log.

    Args:
        query: What to look for.
        limit: At most this many deploys, newest first.
    """
    return ""


@tool
def enum_param(ctx: ToolContext, severity: Severity, services: list[str]) -> str:
    """Page the on-call engineer.

    The page goes to whoever is on call for the first service.

    Args:
        severity: How urgent it is.
        services: The services affected.
    """
    return ""


@tool
def optional_params(service: str, region: str | None = None, since: int | None = None) -> str:
    """The last deploy of a service."""
    return ""


@tool(name="set_limits", description="Set a service's limits.")
def defaults(
    service: str,
    cpu: float = 0.5,
    replicas: int = 2,
    labels: dict[str, str] | None = None,
    dry_run: bool = True,
) -> str:
    return ""


@tool
def literal_param(
    mode: Literal["rollback", "redeploy"], reason: Annotated[str, Field(max_length=200)]
) -> str:
    """Act on a failed deploy.

    Parameters
    ----------
    mode
        Roll back to the last good build, or deploy this one again.
    reason
        One line, for the audit log.
    """
    return ""


@tool
def docstring_only(path: str, lines: int = 20) -> str:
    """Read the tail of a log file.

    Args:
        path: The file, relative to the work directory.
        lines: How many lines from the end.

    Returns:
        The lines, oldest first.
    """
    return ""


SIGNATURES = [nested_model, enum_param, optional_params, defaults, literal_param, docstring_only]


@pytest.mark.parametrize("made", SIGNATURES, ids=lambda t: t.name)
def test_a_function_s_schema_is_the_golden_one(made: Tool) -> None:
    path = GOLDEN / f"{made.name}.json"
    got = json.dumps(made.schema(), indent=2, sort_keys=True) + "\n"
    if os.environ.get("WAKEFUL_UPDATE_SNAPSHOTS") == "1":
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(got, encoding="utf-8")
    assert got == path.read_text(encoding="utf-8")
    jsonschema.Draft202012Validator.check_schema(made.input_schema)


def test_the_context_parameter_is_not_in_the_schema_and_receives_the_context() -> None:
    seen: list[ToolContext] = []

    def whoami(ctx: ToolContext, loud: bool = False) -> str:
        seen.append(ctx)
        return ctx.agent.upper() if loud else ctx.agent

    made = tool(whoami)
    assert list(made.input_schema["properties"]) == ["loud"]
    ctx = ToolContext(tenant="t", agent="a1", wake_id="w", tool_call_id="c", workdir=".")
    assert made.fn({"loud": True}, ctx) == "A1"
    assert seen == [ctx]


def test_wrong_arguments_raise_tool_retry_naming_each_field() -> None:
    ctx = ToolContext(tenant="t", agent="a1", wake_id="w", tool_call_id="c", workdir=".")
    with pytest.raises(ToolRetry) as caught:
        nested_model.fn({"query": {"service": "billing", "window": {"start": "soon"}}}, ctx)
    assert str(caught.value).splitlines() == [
        "invalid arguments for nested_model:",
        "- query.window.start: Input should be a valid date or datetime, input is too short"
        ' (got "soon")',
    ]
    with pytest.raises(ToolRetry) as caught:
        enum_param.fn({"severity": "urgent", "service": "x"}, ctx)
    assert str(caught.value).splitlines()[1:] == [
        "- severity: Input should be 'low' or 'high' (got \"urgent\")",
        "- services: Field required",
        '- service: Extra inputs are not permitted (got "x")',
    ]


@dataclass
class Row:
    name: str
    when: date


class Report(BaseModel):
    severity: Severity
    rows: list[Row]


def test_return_values_are_canonical_json_text() -> None:
    assert result_text("as is") == "as is"
    assert result_text({"b": 1, "a": [1.5, None]}) == '{"a":[1.5,null],"b":1}'
    assert result_text(3) == "3"
    report = Report(severity=Severity.high, rows=[Row("é", date(2024, 5, 1))])
    assert result_text(report) == '{"rows":[{"name":"é","when":"2024-05-01"}],"severity":"high"}'


def test_agent_tool_registers_functions_and_still_looks_tools_up() -> None:
    agent = Agent(name="ops", instructions="x", tools=(docstring_only,))

    @agent.tool
    def ping(host: str) -> str:
        """Ping a host."""
        return host

    @agent.tool(name="pong", max_retries=0, timeout_s=5)
    async def pong_fn() -> int:
        return 1

    agent.tool(optional_params)  # a Tool made by @tool is added as it is
    assert agent.tool("optional_params") is optional_params
    assert ping("h") == "h", "the decorated function is returned as it was"
    names = ["docstring_only", "ping", "pong", "optional_params"]
    assert [t.name for t in agent.tools] == names
    assert agent.tool("pong").max_retries == 0 and agent.tool("pong").timeout_s == 5
    assert [t.name for t in agent.runtime().tools] == names
    with pytest.raises(UserError, match="two tools are named 'ping'"):
        agent.tool(ping)
    with pytest.raises(UserError, match="has no tool 'nope'"):
        agent.tool("nope")


def test_plain_functions_in_an_agent_s_tools_are_made_tools() -> None:
    def lookup(key: str) -> str:
        """Look a key up."""
        return key

    agent = Agent(name="ops", instructions="x", tools=(lookup,))  # type: ignore[arg-type]
    assert agent.tool("lookup").input_schema["required"] == ["key"]


def test_a_signature_the_model_cannot_fill_is_refused_with_one_line() -> None:
    def star(*names: str) -> str:
        return ""

    def late_ctx(x: int, ctx: ToolContext) -> str:
        return ""

    with pytest.raises(UserError, match="parameter 'names' is variadic positional"):
        tool(star)
    with pytest.raises(UserError, match="the ToolContext parameter must come first"):
        tool(late_ctx)
    with pytest.raises(UserError, match="max_retries must be an integer >= 0"):
        tool(max_retries=-1)(lambda path: path)


def test_defining_agents_and_tools_does_not_load_temporal_or_the_substrate() -> None:
    code = (
        "import sys; from wakeful import Agent, AgentRegistry, ToolContext, ToolRetry, tool;"
        " print(sorted(m for m in ('temporalio', 'sqlalchemy', 'anthropic', 'openai')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_package_exports_its_public_api_lazily() -> None:
    for name in wakeful.__all__:
        assert getattr(wakeful, name) is not None, name
    assert wakeful.tool is tool and wakeful.Agent is Agent
    with pytest.raises(AttributeError):
        wakeful.Nope  # type: ignore[attr-defined]  # noqa: B018
