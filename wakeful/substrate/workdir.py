"""The state of a work directory as a context layer: git branch, status and recent
commits, and when chosen files last changed.

Give it to an agent with
``Agent(context_sources=(WorkdirState("repo", files=["deploy.yaml"]),))``: it is read on
every compile (in a thread of its own, beside the substrate reads), so each wake sees the
directory as it is then, and it is stored with the compile, so a replay gives the same
bytes later. Its block is a task frame, placed after the stable prefix; its text holds no
clock reading, only the directory's own state, so an unchanged directory gives unchanged
bytes (the prompt cache keeps it).
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from wakeful.compiler.blocks import Block, BlockKind, Stability
from wakeful.substrate.sources import SourceContext

__all__ = ["WorkdirState"]

_GIT_TIMEOUT_S = 10


@dataclass(frozen=True)
class WorkdirState:
    """A work directory's state (see the module's docstring). ``files`` are paths relative
    to ``path``; ``commits`` how many recent commits to list; ``status_lines`` how many
    lines of ``git status`` at most (the rest is counted)."""

    path: str = "."
    files: Sequence[str] = ()
    commits: int = 5
    status_lines: int = 30
    name: str = "environment"
    stability: Stability = Stability.DYNAMIC
    substrate: bool = False
    # The compiler's layer budget (compiler.layers): higher is admitted first when the window
    # is tight; a share caps its tokens at that fraction of the input budget.
    priority: int | None = None
    budget_share: float | None = None
    _files: tuple[str, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_files", tuple(self.files))

    def blocks(self, ctx: SourceContext) -> Sequence[Block]:
        return [
            Block(
                id="env:workdir",
                kind=BlockKind.TASK_FRAME,
                text=self.text(),
                source=f"workdir:{self.path}",
            )
        ]

    def text(self) -> str:
        root = Path(self.path)
        lines = [f"Work directory {self.path}:"]
        if not root.is_dir():
            return lines[0] + " missing"
        if self._git("rev-parse", "--is-inside-work-tree") is None:
            lines.append("not a git repository")
        else:
            branch = (self._git("branch", "--show-current") or "").strip()
            lines.append(f"branch: {branch or '(detached)'}")
            status = (self._git("status", "--porcelain") or "").splitlines()
            if not status:
                lines.append("status: clean")
            else:
                lines.append(f"status: {len(status)} changed path(s)")
                lines.extend(f"  {s}" for s in status[: self.status_lines])
                if len(status) > self.status_lines:
                    lines.append(f"  ... and {len(status) - self.status_lines} more")
            log = self._git("log", f"-{self.commits}", "--format=%h %ad %s", "--date=short")
            if log and log.strip():
                lines.append("recent commits:")
                lines.extend(f"  {c}" for c in log.strip().splitlines())
        for name in self._files:
            file = root / name
            if file.is_file():
                stat = file.stat()
                when = datetime.fromtimestamp(stat.st_mtime, UTC).isoformat(timespec="seconds")
                lines.append(f"file {name}: modified {when}, {stat.st_size} bytes")
            else:
                lines.append(f"file {name}: missing")
        return "\n".join(lines)

    def _git(self, *args: str) -> str | None:
        """``git`` in the directory; None when it is not a repository (or git is absent)."""
        try:
            done = subprocess.run(
                ["git", "-C", self.path, *args],
                capture_output=True,
                text=True,
                timeout=_GIT_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout if done.returncode == 0 else None
