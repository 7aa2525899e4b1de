"""Skills: instructions an agent loads when a task needs them, in the Agent Skills format.

A skills directory holds one folder per skill, each with a ``SKILL.md``: YAML front matter
with the skill's ``name`` (the folder's name: lowercase letters, digits and hyphens) and a
``description`` (what it is for and when to use it), then the body, the instructions
themselves. An agent gets skills from ``Agent(skills_dir=...)`` and from the worker's
``WAKEFUL_SKILLS_DIR`` (its own win on a name both have); both are read and validated when
the worker starts, and a bad file stops it with one line naming the file and the field.

What the model sees:

* the **index** (each skill's name and description, sorted by name) in the stable prefix,
  cached with the instructions, and the built-in ``load_skill`` tool beside the agent's
  tools;
* a skill's **body**, in the semi-stable segment, while a firing policy trigger injects
  ``skill:<name>``, or from the call after the model called ``load_skill`` on, for the rest
  of the session while the task class stays the same (a goal of another task class unloads
  it: ``compiler.triggers``). That call's result event is the durable record (its meta names
  the skill and the task class), so a replay finds the same loaded skills at the same event
  horizon.

The skills travel in the agent's spec of each compile (``spec["skills"]``, only for an agent
that has some), so a past compile is rebuilt from what it stored, not from the files now.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from wakeful.compiler.triggers import SKILL_PREFIX
from wakeful.errors import ConfigError

if TYPE_CHECKING:
    pass

__all__ = [
    "LOAD_SKILL",
    "SKILL_FILE",
    "SKILL_META",
    "SKILL_TASK_META",
    "Skill",
    "answer_load_skill",
    "index_text",
    "load_skill_schema",
    "load_skills_dir",
    "merge_skills",
    "skill_ref",
    "skills_of_spec",
    "spec_with_skills",
]

SKILL_FILE = "SKILL.md"
LOAD_SKILL = "load_skill"
SKILL_META = "skill"  # a load_skill result event's meta: the skill it loaded
SKILL_TASK_META = "task"  # ...and the task class of the wake's goal (compiler.triggers.task_of)
NAME_RULE = "1-64 characters: lowercase letters, digits and single hyphens, as its folder is named"
MAX_DESCRIPTION = 1024
_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*\r?$\n?", re.DOTALL | re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    body: str

    def spec(self) -> dict[str, str]:
        return {"name": self.name, "description": self.description, "body": self.body}


def skill_ref(name: str) -> str:
    """The id of a skill's body block, as a trigger's ``inject`` names it."""
    return f"{SKILL_PREFIX}{name}"


def _bad(path: Path, field: str, why: str) -> ConfigError:
    return ConfigError(f"bad skill file {path}: {field}: {why}")


def parse_skill(text: str, path: Path) -> Skill:
    """The skill in ``text`` (the contents of ``path``); one :class:`ConfigError` line naming
    the file and the field when it is not a valid skill."""
    m = _FRONT.match(text)
    if m is None:
        raise _bad(
            path,
            "front matter",
            "the file must open with YAML front matter between"
            " '---' lines, holding name and description",
        )
    try:
        meta = yaml.safe_load(m.group(1))
    except yaml.YAMLError as exc:
        raise _bad(path, "front matter", f"not valid YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(meta, dict):
        raise _bad(path, "front matter", "expected a mapping with name and description")
    name, description = meta.get("name"), meta.get("description")
    if not isinstance(name, str) or len(name) > 64 or not _NAME.match(name):
        raise _bad(path, "name", f"{name!r} is not a skill name: {NAME_RULE}")
    if name != path.parent.name:
        raise _bad(path, "name", f"{name!r} must be its folder's name, {path.parent.name!r}")
    if not isinstance(description, str) or not description.strip():
        raise _bad(path, "description", "must be a non-empty string: what the skill is for")
    description = " ".join(description.split())  # one line of the index
    if len(description) > MAX_DESCRIPTION:
        raise _bad(
            path, "description", f"has {len(description)} characters; at most {MAX_DESCRIPTION}"
        )
    body = text[m.end() :].strip()
    if not body:
        raise _bad(path, "body", "is empty: the instructions follow the front matter")
    return Skill(name=name, description=description, body=body)


def load_skills_dir(directory: Path) -> tuple[Skill, ...]:
    """The skills of ``directory``'s ``<name>/SKILL.md`` files, sorted by name. A missing
    directory, or a file that cannot be read or is not a valid skill, is one
    :class:`ConfigError` line naming the file (and the field)."""
    if not directory.is_dir():
        raise ConfigError(
            f"skills directory {str(directory)!r} does not exist or is not a directory;"
            " point it at a directory of <name>/SKILL.md folders"
        )
    out: list[Skill] = []
    for folder in sorted(directory.iterdir()):
        path = folder / SKILL_FILE
        if not folder.is_dir() or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ConfigError(f"cannot read skill file {path}: {why}") from None
        out.append(parse_skill(text, path))
    return tuple(out)


def merge_skills(*sets: Iterable[Skill]) -> tuple[Skill, ...]:
    """One skill per name, a later set's winning (the agent's over the worker's), by name."""
    by_name: dict[str, Skill] = {}
    for skills in sets:
        for s in skills:
            by_name[s.name] = s
    return tuple(by_name[n] for n in sorted(by_name))


def spec_with_skills(spec: dict[str, Any], skills: Sequence[Skill]) -> dict[str, Any]:
    """The agent's spec with its skills (an agent without skills keeps its spec as it was,
    and with it every byte of its windows)."""
    if not skills:
        return spec
    return spec | {"skills": [s.spec() for s in sorted(skills, key=lambda s: s.name)]}


def skills_of_spec(spec: Mapping[str, Any]) -> tuple[Skill, ...]:
    return tuple(Skill(**s) for s in spec.get("skills", ()))


def index_text(skills: Sequence[Skill]) -> str:
    """The skills index: a line per skill, sorted by name (only names and descriptions, so
    it changes only when a skill is added, removed or described anew)."""
    lines = [f"- {s.name}: {s.description}" for s in sorted(skills, key=lambda s: s.name)]
    return (
        "<skills_index>\nSkills you can use. Before a task a skill covers, call"
        f" {LOAD_SKILL} with its name: its instructions then stay in your context for the"
        " rest of the session.\n" + "\n".join(lines) + "\n</skills_index>"
    )


def load_skill_schema() -> dict[str, Any]:
    """The built-in tool, as the compile activity adds it to an agent with skills."""
    return {
        "name": LOAD_SKILL,
        "description": (
            "Load a skill's instructions by its name (the skills index lists them). They"
            " stay in your context for the rest of the session."
        ),
        "input_schema": {
            "type": "object",
            "properties": {"name": {"type": "string", "description": "The skill's name."}},
            "required": ["name"],
            "additionalProperties": False,
        },
    }


def answer_load_skill(
    skills: Sequence[Skill], args: Mapping[str, Any]
) -> tuple[bool, str, str | None]:
    """``load_skill``'s answer: (is_error, text, the skill loaded). An unknown name is an
    error result listing the known names, so the model can call it again rightly."""
    name = args.get("name")
    known = {s.name for s in skills}
    if not isinstance(name, str) or name not in known:
        listed = ", ".join(sorted(known)) or "none"
        return True, f"no skill is named {name!r}; the known skills are: {listed}", None
    return (
        False,
        f"Skill {name!r} is loaded: its instructions are in your context from your next step"
        " on, for the rest of this session.",
        name,
    )
