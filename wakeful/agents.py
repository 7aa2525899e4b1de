"""Agents are defined in code: name, instructions, tools, model, budget.

An :class:`Agent` lives in the worker process (its tools are Python callables). What crosses
into a workflow is its :class:`AgentRuntime` — names, limits and retry settings only — so a
workflow never holds a callable or a window.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Unpack, overload

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)

from wakeful.compiler.layer_budget import (
    LayerBudget,
    check_builtin_layers,
    layers_spec,
)
from wakeful.decisions import is_builtin_decision_tool, remember_decision_tool
from wakeful.errors import ConfigError, UnknownAgentError, UserError
from wakeful.mcp_tools import SEP, McpServer
from wakeful.names import (
    AgentName,
    TenantName,
    check_agent_name,
    check_tenant,
    is_agent_name,
)
from wakeful.runtime_settings import RuntimeSettings, check_redaction_rules

# Re-exported: tools are defined in ``wakeful.tool_spec`` and used from here as ever.
from wakeful.tool_spec import FINAL_RESULT as FINAL_RESULT
from wakeful.tool_spec import LOCAL_TOOL_MAX_S as LOCAL_TOOL_MAX_S
from wakeful.tool_spec import Tool as Tool
from wakeful.tool_spec import ToolContext as ToolContext
from wakeful.tool_spec import ToolFn as ToolFn
from wakeful.tool_spec import ToolOptions, at_least, positive
from wakeful.typed_tools import build_tool, output_tool

if TYPE_CHECKING:
    from wakeful.compiler.policy import WindowPolicy
    from wakeful.skills import Skill


class ApprovalPolicy(BaseModel):
    """How a call of a tool that needs a person's approval waits (see ``Tool``)."""

    model_config = ConfigDict(frozen=True)

    timeout_s: float | None = None
    on_timeout: Literal["deny", "park"] = "deny"


class ToolLimits(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    timeout_s: float
    max_attempts: int
    heartbeat_s: float | None = None
    local: bool = False
    approval: ApprovalPolicy | None = Field(
        None, description="Each call waits for a person's decision (None: runs at once)."
    )

    @model_serializer(mode="wrap")
    def _drop_no_approval(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Every compile's input carries the tool limits: a tool that needs no approval
        # leaves the field out rather than adding ``"approval":null`` to the history.
        data: dict[str, Any] = handler(self)
        if data.get("approval") is None:
            data.pop("approval", None)
        return data


class AgentRuntime(BaseModel):
    """The part of an agent a workflow may see: names and limits, no callables."""

    model_config = ConfigDict(frozen=True)

    # Checked here too, not only on Agent: a runtime also arrives as workflow input, and a
    # name holding ':' would address another tenant's or agent's workflow and rows.
    tenant: TenantName
    name: AgentName
    provider: str
    model: str
    max_model_calls_per_wake: int = 8
    max_tool_calls_per_wake: int = 16
    max_tokens_per_wake: int = 200_000
    # Spend caps (None: no cap), checked before each model call (wakeful.workflows.spend).
    max_usd_per_wake: float | None = None
    max_usd_per_day: float | None = None
    max_tokens_per_day: int | None = None
    tools: tuple[ToolLimits, ...] = ()
    policy: str = Field(default="default", description="Name of the compile policy.")
    local_model_calls: bool = Field(
        default=False,
        description="Model calls run as local activities (see wakeful.workflows.retries).",
    )
    output_tool: str | None = Field(
        default=None,
        description="The tool whose valid call is the answer and ends the wake (typed output).",
    )
    settings: RuntimeSettings | None = Field(
        default=None,
        description="Consolidation, pacing, handoff and redaction settings that are set "
        "(wakeful.runtime_settings); None: the defaults.",
    )

    @model_serializer(mode="wrap")
    def _drop_no_settings(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A runtime without settings dumps (and so is stored and hashed) as it always did.
        data: dict[str, Any] = handler(self)
        if data.get("settings") is None:
            data.pop("settings", None)
        return data

    def limits(self, tool: str) -> ToolLimits | None:
        """The limits a call of ``tool`` runs under: its own, or its MCP server's (an entry
        named ``<server>__*``: the server's tools are only known once a wake lists them)."""
        for t in self.tools:
            if t.name == tool:
                return t
        for t in self.tools:
            if t.name.endswith(f"{SEP}*") and tool.startswith(t.name[:-1]):
                return t
        return None


@dataclass(frozen=True)
class Delegation:
    """A kind of narrow sub-task the agent may hand to a child agent with the ``delegate`` tool.

    The child gets this frame, the task text and the listed tools only — never the parent's
    transcript or retrieval hits — and must answer with JSON matching ``output``. Its result is
    validated with ``output`` and capped at ``max_result_chars`` before the parent merges it as
    an evidence card; an invalid result is retried (``on_invalid="retry"``, up to
    ``max_attempts`` wakes of the child) or reported to the parent's model with the reason.
    """

    name: str
    description: str
    output: type[BaseModel]
    tools: tuple[str, ...] = ()
    instructions: str = ""
    subdir: str = ""
    max_tokens: int = 50_000
    max_model_calls: int = 4
    timeout_s: float = 300.0
    max_result_chars: int = 4_000
    max_attempts: int = 2
    on_invalid: Literal["retry", "report"] = "retry"

    def __post_init__(self) -> None:
        where = f"delegation {self.name!r}"
        at_least(where, "max_tokens", self.max_tokens, 1)
        at_least(where, "max_model_calls", self.max_model_calls, 1)
        at_least(where, "max_result_chars", self.max_result_chars, 1)
        at_least(where, "max_attempts", self.max_attempts, 1)
        positive(where, "timeout_s", self.timeout_s)


@dataclass(frozen=True)
class Agent:
    name: str
    instructions: str
    model: str = "claude-sonnet-4-6"
    provider: str = "anthropic"
    # Tools, or plain functions made tools as ``@tool`` would; more with ``@agent.tool``.
    tools: tuple[Tool, ...] = ()
    # The compile policy: a name (``default``, or one of the worker's policy directory,
    # WAKEFUL_POLICY_DIR), or the path of a .toml/.yaml policy file, read when the agent
    # joins an AgentRegistry (wakeful.policy_files).
    policy: str = "default"
    max_model_calls_per_wake: int = 8
    max_tool_calls_per_wake: int = 16
    max_tokens_per_wake: int = 200_000
    # Spend caps (None: no cap): dollars per wake, dollars and tokens per UTC day. Checked
    # before each model call from the recorded usage; a reached cap ends the wake ``budget``.
    max_usd_per_wake: float | None = None
    max_usd_per_day: float | None = None
    max_tokens_per_day: int | None = None
    workdir: str = "."
    tenant: str = "default"
    meta: dict[str, str] = field(default_factory=dict)
    delegations: tuple[Delegation, ...] = ()
    max_parallel_children: int = 3
    # Model calls as local activities, in the worker running the wake: no task-queue round
    # trip per call, so less latency and server load per wake; but a call's attempts are one
    # marker in the history, not an event each, and a query waits while a long call holds
    # the workflow task (wakeful.workflows.retries). Off: model calls are activities.
    local_model_calls: bool = False
    # A typed answer: a pydantic model (or any type pydantic validates). The agent then
    # answers by calling the ``final_result`` tool with it (every reply must call a tool),
    # and the validated value is the wake's output. None: the answer is the reply's text.
    output_type: Any = None
    # MCP servers whose tools are this agent's too, as ``<server>__<tool>`` (wakeful.mcp_tools).
    mcp_servers: tuple[McpServer, ...] = ()
    # The built-in ``remember_decision`` tool: the model records decisions in the load-bearing
    # registry under a stable key (wakeful.decisions). Opt-in: its schema joins the stable
    # prefix, so turning it on for every agent would change every agent's cached prefix.
    decisions: bool = False
    # A directory of skills (<name>/SKILL.md, wakeful.skills), read when the agent joins an
    # AgentRegistry: their index joins the stable prefix with the built-in ``load_skill``
    # tool, and a body enters the window when a trigger injects ``skill:<name>`` or the
    # model loads it. None: the worker's skills only (WAKEFUL_SKILLS_DIR), if any.
    skills_dir: str | None = None
    # More layers of context (wakeful.substrate.sources.ContextSource), asked on every
    # compile besides the built-in ones; what they give is stored with the compile. And
    # query sources (wakeful.substrate.query_sources.QuerySource), asked once the goal is
    # classified, beside retrieval, with what the others gathered; stored likewise.
    context_sources: tuple[Any, ...] = ()
    query_sources: tuple[Any, ...] = ()
    # Documents retrieval searches beside the agent's history (layer 3): files, folders and
    # globs of markdown, text or code, relative to the working directory of the process
    # that registers the agent, added (as ``wakeful docs add`` does) when it is registered
    # (``wakeful agent create``, the worker's start); a changed file replaces its old chunks.
    documents: tuple[str, ...] = ()
    # Priorities and budget shares of built-in layers (wakeful.compiler.layers), by name:
    # ``documents`` (the document chunks retrieval brings), e.g.
    # ``{"documents": LayerBudget(priority=1, budget_share=0.2)}``. A source of one's own
    # (WorkdirState, CodeMap, ...) declares its own ``priority`` and ``budget_share``.
    layers: dict[str, LayerBudget] = field(default_factory=dict)
    # The note a session ends with (wakeful.activities.handoff_note): "model" asks this
    # agent's model for it, over the session's newest ``handoff_note_tokens`` of turns, and
    # uses it if it passes the checks; "template" (and any failure) stitches the wakes' notes.
    handoff_notes: Literal["model", "template"] = "model"
    handoff_note_tokens: int = 8_000
    # Failover: (provider, model) pairs, in order, that a model call goes to when this
    # agent's provider is overloaded, fails, times out or is unreachable (the policy's
    # ``[failover]`` says when, and how long a failed one is skipped; its ``fallbacks``
    # are used when these are empty). Each gets a window the compiler rendered for it.
    fallbacks: tuple[tuple[str, str], ...] = ()
    # Runtime settings (wakeful.runtime_settings; None: the default, or the policy file's
    # ``[consolidation]``, ``[pacing]``, ``[handoff]`` and ``[redaction]`` tables when the
    # policy is a file; these win over those). Durations: seconds, "10m", "1h", timedelta.
    consolidation_min_age: timedelta | float | str | None = None  # default 1h
    consolidation_keep_events: int | None = None  # default 40
    summary_model: str | None = None  # default: the agent's model
    keep_warm_calls: int | None = None  # per idle period; default 3, 0: never
    # default 1h, past which the session goes on only when pacing prices that cheaper than
    # a handoff; set, a session idle this long always ends
    handoff_after_idle: timedelta | float | str | None = None
    handoff_model: str | None = None  # the handoff note's model; default: the agent's
    redaction: Mapping[str, bool] = field(default_factory=dict)  # e.g. {"email": True}

    def __post_init__(self) -> None:
        # Plain functions in ``tools`` are made tools as ``@tool`` would (Tool is frozen, as
        # is Agent: the replaced tuple is set the way a frozen dataclass sets its fields).
        # The built-in decision tool follows ``decisions`` (dataclasses.replace passes the
        # tools on, with it among them when it was on).
        given = tuple(t for t in self.tools if not is_builtin_decision_tool(t))
        object.__setattr__(self, "tools", ())
        for t in given:
            self._add_tool(t)
        if self.decisions:
            self._add_tool(remember_decision_tool())
        if self.output_type is not None:
            self._add_tool(output_tool(self.output_type))
        check_tenant(self.tenant, f"Agent {self.name!r}")
        if not self._is_child():
            check_agent_name(self.name, f"Agent(tenant={self.tenant!r})")
        where = f"agent {self.name!r}"
        for text in ("provider", "model", "policy"):
            value = getattr(self, text)
            if not isinstance(value, str) or not value.strip():
                raise UserError(f"{where}: {text} must be a non-empty name (got {value!r})")
        at_least(where, "max_model_calls_per_wake", self.max_model_calls_per_wake, 1)
        at_least(where, "max_tool_calls_per_wake", self.max_tool_calls_per_wake, 0)
        at_least(where, "max_tokens_per_wake", self.max_tokens_per_wake, 1)
        at_least(where, "max_parallel_children", self.max_parallel_children, 1)
        object.__setattr__(self, "fallbacks", tuple(tuple(f) for f in self.fallbacks))
        for fallback in self.fallbacks:
            if len(fallback) != 2 or not all(isinstance(v, str) and v.strip() for v in fallback):
                raise UserError(
                    f"{where}: each of fallbacks must be a (provider, model) pair of names"
                    f" (got {fallback!r}), e.g. ('openai_chat', 'gpt-4.1-mini')"
                )
        for cap in ("max_usd_per_wake", "max_usd_per_day"):
            if getattr(self, cap) is not None:
                positive(where, cap, getattr(self, cap), "dollars (or None: no cap)")
        if self.max_tokens_per_day is not None:
            at_least(where, "max_tokens_per_day", self.max_tokens_per_day, 1)
        if self.handoff_notes not in ("model", "template"):
            raise UserError(
                f"{where}: handoff_notes is {self.handoff_notes!r}; use 'model' or 'template'"
            )
        at_least(where, "handoff_note_tokens", self.handoff_note_tokens, 1)
        for field_name, protocol in (
            ("context_sources", "wakeful.substrate.sources.ContextSource"),
            ("query_sources", "wakeful.substrate.query_sources.QuerySource"),
        ):
            object.__setattr__(self, field_name, tuple(getattr(self, field_name)))
            for source in getattr(self, field_name):
                if not callable(getattr(source, "blocks", None)) or not isinstance(
                    getattr(source, "name", None), str
                ):
                    raise UserError(
                        f"{where}: {field_name} holds {source!r}; a source has a name, a"
                        f" stability and blocks(ctx) ({protocol})"
                    )
        if isinstance(self.documents, str):
            raise UserError(f"{where}: documents is one string; give a list of paths or globs")
        given_docs: tuple[object, ...] = tuple(self.documents)
        for doc in given_docs:
            if not isinstance(doc, str | PathLike) or not str(doc).strip():
                raise UserError(
                    f"{where}: documents holds {doc!r}; give file, folder or glob paths"
                )
        object.__setattr__(self, "documents", tuple(str(d) for d in given_docs))
        self._own_settings()  # a bad setting fails here, with its name
        check_builtin_layers(where, self.layers)
        object.__setattr__(self, "mcp_servers", tuple(self.mcp_servers))
        for i, server in enumerate(self.mcp_servers):
            if not isinstance(server, McpServer):
                raise UserError(f"{where}: mcp_servers holds {server!r}; use McpServer(...)")
            if any(s.name == server.name for s in self.mcp_servers[:i]):
                raise UserError(f"{where}: two MCP servers are named {server.name!r}")

    def _own_settings(self) -> RuntimeSettings:
        given = {
            "consolidation_min_age": self.consolidation_min_age,
            "consolidation_keep_events": self.consolidation_keep_events,
            "summary_model": self.summary_model,
            "keep_warm_calls": self.keep_warm_calls,
            "handoff_after_idle": self.handoff_after_idle,
            "handoff_model": self.handoff_model,
            "redaction": dict(self.redaction),
        }
        try:
            check_redaction_rules(self.redaction)
        except ValueError as exc:
            raise UserError(
                f"agent {self.name!r}: redaction is {given['redaction']!r}: {exc}"
            ) from None
        try:
            return RuntimeSettings.model_validate(given)
        except ValidationError as exc:
            err = exc.errors()[0]
            name = ".".join(str(p) for p in err["loc"])
            why = err["msg"].removeprefix("Value error, ")
            raise UserError(
                f"agent {self.name!r}: {name} is {given.get(str(err['loc'][0]))!r}: {why}"
            ) from None

    def settings(self) -> RuntimeSettings | None:
        """The agent's runtime settings: its own over its policy file's (None: defaults)."""
        from wakeful.policy_files import is_policy_path

        own = self._own_settings()
        if is_policy_path(self.policy):
            try:
                own = own.over(_policy_file_settings(self.policy))
            except UserError as exc:
                raise ConfigError(f"agent {self.name!r}: {exc}") from None
        return None if own.is_empty() else own

    def _is_child(self) -> bool:
        """A child agent, ``<parent>/child/<n>``, as Wakeful builds it (its meta names the
        parent); users' agents may not take such a name."""
        parent = self.meta.get("parent", "")
        return (
            is_agent_name(parent)
            and self.name.startswith(f"{parent}/child/")
            and is_agent_name(self.name)
        )

    def delegation(self, name: str) -> Delegation:
        for d in self.delegations:
            if d.name == name:
                return d
        known = ", ".join(d.name for d in self.delegations) or "none"
        raise UserError(f"agent {self.name!r} has no delegation {name!r} (known: {known})")

    @overload
    def tool(self, name: str, /) -> Tool: ...

    @overload
    def tool(self, fn: Callable[..., Any], /) -> Callable[..., Any]: ...

    @overload
    def tool(
        self,
        *,
        name: str | None = None,
        description: str | None = None,
        **options: Unpack[ToolOptions],
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]: ...

    def tool(self, target: Any = None, /, **options: Any) -> Any:  # type: ignore[misc]
        """``@agent.tool`` / ``@agent.tool(name=..., ...)``: make a function one of this
        agent's tools (as :func:`wakeful.tool` does; the function is returned unchanged).

        ``agent.tool("name")`` looks a tool up by name, as it always has."""
        if isinstance(target, str):
            if options:
                raise UserError(
                    f"agent {self.name!r}: agent.tool({target!r}) looks a tool up; to name a"
                    f" new tool write @agent.tool(name={target!r})"
                )
            return self.get_tool(target)

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            # A Tool (made by @wakeful.tool, or by hand) is added as it is.
            self._add_tool(
                fn if isinstance(fn, Tool) and not options else build_tool(fn, **options)
            )
            return fn

        return register(target) if target is not None else register

    def get_tool(self, name: str) -> Tool:
        for tool in self.tools:
            if tool.name == name:
                return tool
        raise UserError(f"agent {self.name!r} has no tool {name!r}")

    def _add_tool(self, tool: Tool | Callable[..., Any]) -> None:
        if not isinstance(tool, Tool):
            tool = build_tool(tool)
        if any(t.name == tool.name for t in self.tools):
            raise UserError(f"agent {self.name!r}: two tools are named {tool.name!r}")
        for server in self.mcp_servers:
            if isinstance(server, McpServer) and tool.name.startswith(server.prefix):
                raise UserError(
                    f"agent {self.name!r}: tool {tool.name!r} would shadow MCP server"
                    f" {server.name!r}'s tools ({server.prefix}...); rename the tool or the server"
                )
        # The agent is frozen for its users; its tools grow only while it is being defined
        # (constructor and decorators), before a worker serves it.
        object.__setattr__(self, "tools", (*self.tools, tool))

    def runtime(self) -> AgentRuntime:
        return AgentRuntime(
            tenant=self.tenant,
            name=self.name,
            provider=self.provider,
            model=self.model,
            max_model_calls_per_wake=self.max_model_calls_per_wake,
            max_tool_calls_per_wake=self.max_tool_calls_per_wake,
            max_tokens_per_wake=self.max_tokens_per_wake,
            max_usd_per_wake=self.max_usd_per_wake,
            max_usd_per_day=self.max_usd_per_day,
            max_tokens_per_day=self.max_tokens_per_day,
            tools=tuple(
                ToolLimits(
                    name=t.name,
                    timeout_s=t.timeout_s,
                    max_attempts=t.max_attempts,
                    heartbeat_s=t.heartbeat_s,
                    local=t.local,
                    approval=(
                        ApprovalPolicy(
                            timeout_s=t.approval_timeout_s, on_timeout=t.on_approval_timeout
                        )
                        if t.requires_approval
                        else None
                    ),
                )
                for t in self.tools
            )
            + tuple(
                # Heartbeats, so a call on a worker that died is retried once they stop.
                ToolLimits(
                    name=f"{s.prefix}*",
                    timeout_s=s.timeout_s,
                    max_attempts=s.max_attempts,
                    heartbeat_s=s.heartbeat_s,
                )
                for s in self.mcp_servers
            ),
            policy=self.policy,
            local_model_calls=self.local_model_calls,
            output_tool=FINAL_RESULT if self.output_type is not None else None,
            settings=self.settings(),
        )

    def spec(self) -> dict[str, Any]:
        """A JSON description of the agent, stored with it (no callables)."""
        return (
            {
                "name": self.name,
                "model": self.model,
                "provider": self.provider,
                "policy": self.policy,
                "tools": [t.spec() for t in self.tools]
                + ([delegate_schema(self.delegations)] if self.delegations else []),
                "instructions": self.instructions,
            }
            | ({"spend_caps": caps} if (caps := self.spend_caps()) else {})
            | ({"tool_choice": "any"} if self.output_type is not None else {})
            | (
                # Where the MCP tools come from; the tools themselves join each wake's spec.
                {"mcp_servers": [s.describe() for s in self.mcp_servers]}
                if self.mcp_servers
                else {}
            )
            # Where its own skills come from (``wakeful agent show`` lists them); the skills
            # themselves join each compile's spec.
            | ({"skills_dir": self.skills_dir} if self.skills_dir is not None else {})
            # The paths it was given; the documents themselves are rows of their own.
            | ({"documents": list(self.documents)} if self.documents else {})
            # The built-in layers' budgets: a replay stamps the same blocks with them.
            | ({"layers": layers_spec(self.layers)} if self.layers else {})
        )

    def spend_caps(self) -> dict[str, float | int]:
        """The spend caps that are set (stored with the spec for ``wakeful agent show``;
        an agent without caps keeps the spec, and its hash, it always had)."""
        caps = {
            "max_usd_per_wake": self.max_usd_per_wake,
            "max_usd_per_day": self.max_usd_per_day,
            "max_tokens_per_day": self.max_tokens_per_day,
        }
        return {k: v for k, v in caps.items() if v is not None}


def _policy_file_settings(path: str) -> RuntimeSettings | None:
    """The settings tables of the policy file ``path``, read once per version of it."""
    from wakeful.policy_files import settings_of_policy_path

    where = Path(path)
    try:
        stamp = where.stat().st_mtime_ns
    except OSError:
        return None  # registering the agent reads the policy, and says why it cannot
    held = _FILE_SETTINGS.get(path)
    if held is None or held[0] != stamp:
        held = _FILE_SETTINGS[path] = (stamp, settings_of_policy_path(where))
    return held[1]


_FILE_SETTINGS: dict[str, tuple[int, RuntimeSettings | None]] = {}


def delegate_schema(delegations: tuple[Delegation, ...]) -> dict[str, Any]:
    """The ``delegate`` tool as the model sees it: one call per sub-task, run in parallel."""
    kinds = "; ".join(f"{d.name}: {d.description}" for d in delegations)
    return {
        "name": "delegate",
        "description": (
            "Hand a narrow sub-task to a child agent that sees only the task you write (not "
            "this conversation) and returns a validated JSON result as evidence. Call it "
            f"several times in one reply to run sub-tasks in parallel. Kinds: {kinds}"
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "kind": {"type": "string", "enum": [d.name for d in delegations]},
                "task": {"type": "string", "description": "Everything the child needs."},
            },
            "required": ["kind", "task"],
        },
    }


class AgentRegistry:
    """The agents one worker process serves. Built explicitly; not a global."""

    def __init__(self, agents: Iterable[Agent] = ()) -> None:
        self._agents: dict[tuple[str, str], Agent] = {}
        # Policies the agents name by file path, read as they are registered, keyed by the
        # path as the agent gives it (its runtime carries that to the compile activity).
        self.policies: dict[str, WindowPolicy] = {}
        # Skills of the directories agents name (``Agent(skills_dir=...)``), read likewise.
        self.skills: dict[str, tuple[Skill, ...]] = {}
        self._fallback: Callable[[str, str], Agent | None] | None = None
        for agent in agents:
            self.register(agent)

    def set_fallback(self, fallback: Callable[[str, str], Agent | None]) -> None:
        """Resolve names this process was not given (child agents registered elsewhere)."""
        self._fallback = fallback

    def register(self, agent: Agent) -> None:
        # Agent checks its names; checked again here, where they become the registry's keys.
        check_tenant(agent.tenant, f"agent {agent.name!r}")
        check_agent_name(agent.name, f"tenant {agent.tenant!r}", child=True)
        from wakeful.policy_files import is_policy_path, load_policy_path

        if is_policy_path(agent.policy) and agent.policy not in self.policies:
            try:
                self.policies[agent.policy] = load_policy_path(Path(agent.policy))
            except UserError as exc:
                raise ConfigError(f"agent {agent.name!r}: {exc}") from None
        if agent.skills_dir is not None and agent.skills_dir not in self.skills:
            from wakeful.skills import load_skills_dir

            try:
                self.skills[agent.skills_dir] = load_skills_dir(Path(agent.skills_dir))
            except UserError as exc:
                raise ConfigError(f"agent {agent.name!r}: {exc}") from None
        self._agents[(agent.tenant, agent.name)] = agent

    def agent_skills(self, agent: Agent) -> tuple[Skill, ...]:
        """The skills of ``agent``'s own directory (none without one)."""
        return () if agent.skills_dir is None else self.skills.get(agent.skills_dir, ())

    def get(self, tenant: str, name: str) -> Agent:
        try:
            return self._agents[(tenant, name)]
        except KeyError:
            found = self._fallback(tenant, name) if self._fallback is not None else None
            if found is not None:
                self.register(found)
                return found
            known = ", ".join(sorted(n for t, n in self._agents if t == tenant)) or "none"
            raise UnknownAgentError(
                f"no agent {name!r} is registered for tenant {tenant!r} (known: {known})"
            ) from None

    def __iter__(self) -> Any:
        return iter(sorted(self._agents.values(), key=lambda a: (a.tenant, a.name)))
