"""Tools built from plain functions: the input schema from the signature, type hints and
docstring; arguments validated before the call; any JSON-serialisable return value.

    @tool
    def deploy_status(service: str, last: int = 1) -> list[Deploy]:
        '''The last deploys of a service and how they ended.

        Args:
            service: The service's name, as in the deploy log.
            last: How many deploys, newest first.
        '''

The function becomes a :class:`~wakeful.agents.Tool` whose ``fn`` takes the model's
arguments (a dict) and a :class:`~wakeful.agents.ToolContext`, as every tool does, so the
tool activity runs both forms alike. Pydantic does the work: the parameters become a model
(:func:`pydantic.create_model`), whose JSON schema is the tool's input schema and whose
validation checks the model's arguments. Arguments the model got wrong are not a crash: they
raise :class:`ToolRetry`, which the tool activity returns to the model as an error result
naming each field and its problem, counted against the tool's ``max_retries``.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, Unpack, get_type_hints, overload

import docstring_parser
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model
from pydantic.json_schema import GenerateJsonSchema

from wakeful.errors import UserError
from wakeful.tool_spec import FINAL_RESULT, Tool, ToolContext, ToolOptions

__all__ = ["FINAL_RESULT", "ToolRetry", "build_tool", "output_tool", "result_text", "tool"]

F = TypeVar("F", bound=Callable[..., Any])


class ToolRetry(Exception):
    """Raise from a tool to have the model call it again, differently.

    The message is the tool's result, marked as an error, so say what was wrong and what
    would be right ("no service 'biling'; known: billing, search"). Each one counts against
    the tool's ``max_retries`` in the wake, as invalid arguments do.
    """


class _ToolSchema(GenerateJsonSchema):
    """Pydantic's JSON schema without the titles it derives from field names: the model
    reads the names already, and every token of a tool's schema is sent on every call."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def build_tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    **options: Unpack[ToolOptions],
) -> Tool:
    """The :class:`~wakeful.agents.Tool` of a plain function (sync or ``async def``)."""
    if not callable(fn):
        raise UserError(f"a tool must be a function (got {fn!r})")
    tool_name = name or str(getattr(fn, "__name__", ""))
    where = f"tool {tool_name!r}"
    doc = docstring_parser.parse(inspect.getdoc(fn) or "")
    params, takes_ctx = _parameters(fn, where)
    described = {p.arg_name: p.description for p in doc.params if p.description}
    fields: dict[str, Any] = {}
    for p in params:
        default = ... if p.default is inspect.Parameter.empty else p.default
        text = described.get(p.name)
        fields[p.name] = (p.annotation, Field(default, description=text) if text else default)
    try:
        args_model = create_model(
            f"{tool_name}_args", __config__=ConfigDict(extra="forbid"), **fields
        )
        schema = args_model.model_json_schema(schema_generator=_ToolSchema)
    except Exception as exc:  # pydantic's own message names the type it cannot handle
        raise UserError(f"{where}: its parameters cannot be a JSON schema: {exc}") from exc
    schema.pop("title", None)
    summary = "\n\n".join(t for t in (doc.short_description, doc.long_description) if t)
    call = _Call(fn, tool_name, args_model, takes_ctx)
    return Tool(
        name=tool_name,
        description=description if description is not None else summary,
        input_schema=schema,
        fn=call,
        **options,
    )


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    **options: Unpack[ToolOptions],
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    **options: Unpack[ToolOptions],
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a :class:`~wakeful.agents.Tool` of a function: ``@tool`` or ``@tool(name=...)``.

    ``timeout_s``, ``max_attempts``, ``local`` and ``heartbeat_s`` are the tool activity's
    (see :class:`~wakeful.agents.Tool`); ``max_retries`` bounds the calls per wake the model
    may get wrong (invalid arguments or :class:`ToolRetry`) before it is told to stop.
    ``requires_approval`` makes each call wait for a person's decision (``wakeful
    approve``), at most ``approval_timeout_s``; then ``on_approval_timeout`` denies the
    call or parks the wake. ``fresh_for`` (seconds or a timedelta) is how long a result
    stays true; ``authoritative`` makes its results win over copies from elsewhere.
    """

    def make(f: Callable[..., Any]) -> Tool:
        return build_tool(f, name=name, description=description, **options)

    return make(fn) if fn is not None else make


def _parameters(fn: Callable[..., Any], where: str) -> tuple[list[inspect.Parameter], bool]:
    """The parameters the model fills (annotations resolved), and whether the first one
    takes the :class:`ToolContext` instead."""
    try:
        hints = get_type_hints(fn, include_extras=True)
    except Exception as exc:  # a string annotation naming what the module does not define
        raise UserError(
            f"{where}: cannot resolve its type hints ({exc}); define the types it names at"
            " module level"
        ) from exc
    params: list[inspect.Parameter] = []
    takes_ctx = False
    for i, p in enumerate(inspect.signature(fn).parameters.values()):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY):
            raise UserError(
                f"{where}: parameter {p.name!r} is {p.kind.description}; a tool's parameters"
                " must be named (the model passes them by name)"
            )
        hint = hints.get(p.name, Any)
        if isinstance(hint, type) and issubclass(hint, ToolContext):
            if i != 0:
                raise UserError(f"{where}: the ToolContext parameter must come first")
            takes_ctx = True
            continue
        params.append(p.replace(annotation=hint))
    return params, takes_ctx


class _Call:
    """The tool's ``fn``: validate the model's arguments, call the function, and turn its
    return value into the text the model reads. An ``async def`` function returns its
    coroutine, which the tool activity runs (see :mod:`wakeful.activities.tool_thread`)."""

    def __init__(
        self, fn: Callable[..., Any], name: str, args_model: type[BaseModel], takes_ctx: bool
    ) -> None:
        self.fn, self.name, self.args_model, self.takes_ctx = fn, name, args_model, takes_ctx
        self.is_async = inspect.iscoroutinefunction(inspect.unwrap(fn))

    def __call__(self, args: dict[str, Any], ctx: ToolContext) -> str | Awaitable[str]:
        try:
            valid = self.args_model.model_validate(args)
        except ValidationError as err:
            raise ToolRetry(invalid_arguments(self.name, err)) from None
        kwargs = {k: getattr(valid, k) for k in type(valid).model_fields}
        call_args = (ctx,) if self.takes_ctx else ()
        if self.is_async:
            return self._text_of(self.fn(*call_args, **kwargs))
        return result_text(self.fn(*call_args, **kwargs))

    @staticmethod
    async def _text_of(result: Awaitable[Any]) -> str:
        return result_text(await result)


def invalid_arguments(name: str, err: ValidationError) -> str:
    """One line per wrong field, as the model can act on: where, what, and what it sent."""
    lines = [f"invalid arguments for {name}:"]
    for e in err.errors(include_url=False):
        where = ".".join(str(part) for part in e["loc"]) or "(arguments)"
        sent = json.dumps(e.get("input"), default=str)[:80]
        got = "" if e["type"] == "missing" else f" (got {sent})"
        lines.append(f"- {where}: {e['msg']}{got}")
    return "\n".join(lines)


_ANY: TypeAdapter[Any] = TypeAdapter(Any)


def result_text(value: Any) -> str:
    """What the model reads: a string as it is; anything else (pydantic models, dataclasses,
    dicts, lists, numbers, None) as canonical JSON — keys sorted, no spaces — so the same
    result is the same bytes in every window that holds it."""
    if isinstance(value, str):
        return value
    # Imported here: `from wakeful import tool` should not load the whole compiler package.
    from wakeful.compiler.canonical import canonical_json

    return canonical_json(_ANY.dump_python(value, mode="json"))


def output_tool(output_type: Any) -> Tool:
    """The tool whose arguments are the agent's final answer, validated as ``output_type``.

    A pydantic model's fields are the tool's parameters; any other type is the value of a
    single ``result`` parameter. An answer that does not validate comes back to the model
    as an error naming each field (counted against ``max_retries``, like any tool's wrong
    arguments); a valid one is stored as the tool's result, canonical JSON, and ends the
    wake: it is ``WakeResult.output``.
    """
    adapter: TypeAdapter[Any] = TypeAdapter(output_type)
    is_model = isinstance(output_type, type) and issubclass(output_type, BaseModel)
    schema = adapter.json_schema(schema_generator=_ToolSchema)
    if not is_model:
        schema = {
            "type": "object",
            "properties": {"result": schema},
            "required": ["result"],
            "additionalProperties": False,
        }

    def answer(args: dict[str, Any], ctx: ToolContext) -> str:
        try:
            value = adapter.validate_python(args if is_model else args.get("result"))
        except ValidationError as err:
            raise ToolRetry(invalid_arguments(FINAL_RESULT, err)) from None
        return result_text(value)

    return Tool(
        name=FINAL_RESULT,
        description=(
            "Give your final answer by calling this tool: its arguments are the answer. "
            "Do not answer in plain text; call it once you are done."
        ),
        input_schema=schema,
        fn=answer,
        timeout_s=10.0,
        max_attempts=1,
        local=True,  # pure validation: no reason to go through the task queue
        max_retries=2,
    )
