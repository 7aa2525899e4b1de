"""What a trigger may say about its work besides its text: intents, paths and a task class.

They become the wake's :class:`~wakeful.compiler.blocks.Goal`, where the compile policy's
triggers match them (``compiler/triggers.py``: intents and task classes by name, paths by
glob). The CLI (``--intent/--path/--task-class``), the webhook body and schedules check
them here, with the same rules, so a bad value is refused where it is sent, in one line.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from wakeful.compiler.blocks import Goal
from wakeful.errors import UserError

__all__ = [
    "MAX_INTENTS",
    "MAX_PATHS",
    "NAME_PATTERN",
    "NAME_RULE",
    "PATH_PATTERN",
    "PATH_RULE",
    "RouteName",
    "RoutePath",
    "Routing",
    "routing",
]

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,63}$"
NAME_RULE = "1-64 of A-Z a-z 0-9 _ . : / -, starting with a letter or digit"
PATH_PATTERN = r"^[^\x00-\x1f\x7f]{1,1024}$"
PATH_RULE = "1-1024 characters, no control characters"
MAX_INTENTS = 32
MAX_PATHS = 256

RouteName = Annotated[str, StringConstraints(pattern=NAME_PATTERN)]
RoutePath = Annotated[str, StringConstraints(pattern=PATH_PATTERN)]


class Routing(BaseModel):
    """Validated intents, paths and task class of one trigger."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    intents: tuple[RouteName, ...] = Field((), max_length=MAX_INTENTS)
    paths: tuple[RoutePath, ...] = Field((), max_length=MAX_PATHS)
    task_class: RouteName | None = None

    def apply(self, goal: Goal) -> Goal:
        """``goal`` carrying these (a goal without any is returned as it is)."""
        if not (self.intents or self.paths or self.task_class):
            return goal
        return goal.model_copy(
            update={"intents": self.intents, "paths": self.paths, "task_class": self.task_class}
        )


def routing(
    intents: Iterable[str] = (), paths: Iterable[str] = (), task_class: str | None = None
) -> Routing:
    """Check them, or raise :class:`UserError` with one line naming the bad value."""
    try:
        return Routing(intents=tuple(intents), paths=tuple(paths), task_class=task_class)
    except ValidationError as err:
        raise UserError(_describe(err)) from None


def _describe(err: ValidationError) -> str:
    """The first problem of a routing validation error, as one line."""
    item = err.errors(include_url=False)[0]
    loc = [str(p) for p in item["loc"]]
    field = loc[0] if loc else "?"
    where = {"intents": "intent", "paths": "path", "task_class": "task class"}.get(field, field)
    if item["type"] == "too_long":
        limit = MAX_INTENTS if field == "intents" else MAX_PATHS
        return f"too many {field}: at most {limit}"
    rule = PATH_RULE if field == "paths" else NAME_RULE
    return f"{where} {item.get('input')!r} is invalid: use {rule}"
