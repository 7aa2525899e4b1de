"""Deterministic text for the cache benchmark's session: prompts, tool schemas, tool output.

Only sizes and variety matter to prompt caching (exact bytes, token counts), so the text
is generated from a seeded vocabulary: log lines, code, test runs, metric tables and prose
that tokenise like the real thing (code and ids cost more tokens per byte than prose).
"""

from __future__ import annotations

import random
from typing import Any

__all__ = [
    "INSTRUCTIONS",
    "TOOLS",
    "Words",
    "ask_text",
    "assistant_text",
    "document",
    "tool_output",
]

_VOCAB = (
    "checkout payment ledger queue retry timeout deploy rollback replica primary shard index "
    "migration schema column latency p99 error budget alert owner runbook canary traffic "
    "region eu-west us-east cache eviction consumer producer partition offset lag batch "
    "worker scheduler cron webhook token session gateway auth refresh expiry certificate "
    "config flag release build artifact pipeline stage test fixture flaky assertion "
    "handler request response header status payload idempotency key backoff jitter quota"
).split()
_SERVICES = (
    "checkout-api ledger-svc payments-gw orders-db search-indexer notify-worker auth-edge "
    "inventory-svc pricing-svc fraud-scorer"
).split()
_TOOL_SPECS = (
    ("read_file", "Read a file from the repository checkout and return its text."),
    ("grep", "Search the repository for a regular expression; returns path:line: match."),
    ("run_tests", "Run a test selection and return the runner's output."),
    ("run_shell", "Run a read-only shell command in the sandbox and return stdout/stderr."),
    ("query_metrics", "Query the metrics store (PromQL) and return a table of series."),
    ("search_docs", "Search runbooks and design documents; returns matching passages."),
    ("write_file", "Write a file in the repository checkout (creates or replaces it)."),
    ("tail_logs", "Return the last lines of a service's logs, optionally filtered."),
)


class Words:
    """A seeded source of words, paths, ids and phrases."""

    def __init__(self, rnd: random.Random) -> None:
        self.rnd = rnd

    def word(self) -> str:
        return self.rnd.choice(_VOCAB)

    def phrase(self, n: int) -> str:
        return " ".join(self.word() for _ in range(n))

    def service(self) -> str:
        return self.rnd.choice(_SERVICES)

    def path(self) -> str:
        return f"src/{self.service()}/{self.word()}_{self.word()}.py"

    def hexid(self, n: int = 8) -> str:
        return "".join(self.rnd.choice("0123456789abcdef") for _ in range(n))

    def sentence(self) -> str:
        s = self.phrase(self.rnd.randint(6, 16))
        return s[0].upper() + s[1:] + "."


def _fill(target_tokens: int, line: Any) -> str:
    """Lines from ``line()`` until about ``target_tokens`` tokens (~3.6 bytes per token)."""
    out: list[str] = []
    size, goal = 0, int(target_tokens * 3.6)
    while size < goal:
        text = line()
        out.append(text)
        size += len(text) + 1
    return "\n".join(out)


def tool_output(w: Words, tool: str, tokens: int, *, error: bool) -> str:
    """What ``tool`` returned, about ``tokens`` long; an error is short and says so."""
    r = w.rnd
    if error:
        head = f"ERROR: {tool} failed with exit status {r.randint(1, 127)}: {w.sentence()}"
        return (
            head
            + "\n"
            + _fill(max(20, tokens - 30), lambda: f"  at {w.path()}:{r.randint(1, 900)}")
        )
    if tool == "read_file":
        return _fill(
            tokens,
            lambda: (
                f"{'    ' * r.randint(0, 3)}{w.word()}_{w.word()} = "
                f"{w.word()}({w.word()}, {r.randint(0, 99)})"
            ),
        )
    if tool == "grep":
        return _fill(tokens, lambda: f"{w.path()}:{r.randint(1, 900)}: {w.phrase(6)}")
    if tool == "run_tests":
        return _fill(
            tokens,
            lambda: (
                f"tests/test_{w.word()}.py::test_{w.word()}_{w.word()} "
                + r.choice(("PASSED", "PASSED", "PASSED", "SKIPPED", "FAILED"))
            ),
        )
    if tool == "query_metrics":
        return _fill(
            tokens,
            lambda: (
                f'{w.word()}_seconds{{service="{w.service()}",le="{r.random():.2f}"}} '
                f"{r.random() * 1000:.3f} {1_750_000_000 + r.randint(0, 99_999)}"
            ),
        )
    if tool == "write_file":
        return f"wrote {r.randint(200, 9000)} bytes to {w.path()}"
    return _fill(
        tokens,
        lambda: (
            f"2025-06-01T{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}Z "
            f"{r.choice(('INFO', 'INFO', 'WARN', 'ERROR'))} {w.service()} "
            f"req={w.hexid()} {w.phrase(5)}"
        ),
    )


def assistant_text(w: Words, tokens: int, decision: Any, *, final: bool) -> str:
    """The model's prose for one call; a planted decision is its first line, verbatim."""
    lines = []
    if decision is not None:
        lines.append(f"DECISION {decision.id}: {decision.text}")
    body = _fill(tokens, w.sentence).replace("\n", " ")
    lines.append(("Summary: " if final else "Next: ") + body)
    return "\n".join(lines)


def ask_text(w: Words, tokens: int, decision: Any) -> str:
    """A user's request to start a wake; a planted decision is stated as a standing rule."""
    lines = [f"Please look into {w.service()}: " + _fill(tokens, w.sentence).replace("\n", " ")]
    if decision is not None:
        lines.append(f"DECISION {decision.id}: {decision.text}")
    return "\n".join(lines)


def document(w: Words, n: int, tokens: int) -> tuple[str, str, str]:
    """(id, title, text) of a runbook or design document."""
    title = f"Runbook {n}: {w.service()} {w.phrase(2)}"
    return f"doc-{n:02d}", title, title + "\n" + _fill(tokens, w.sentence)


def _tool_schema(name: str, summary: str, rnd: random.Random) -> dict[str, Any]:
    w = Words(rnd)
    notes = " ".join(w.sentence() for _ in range(rnd.randint(5, 12)))
    return {
        "name": name,
        "description": f"{summary} {notes}",
        "input_schema": {
            "type": "object",
            "properties": {
                "target": {"type": "string", "description": "Path, service or selector."},
                "query": {"type": "string", "description": "Pattern, command or question."},
                "retry": {"type": "boolean", "description": "Set when retrying a failure."},
            },
            "required": ["target"],
        },
    }


def _instructions() -> str:
    rnd = random.Random(0)
    w = Words(rnd)
    intro = (
        "You are the on-call engineering agent for the commerce platform. You investigate "
        "alerts, read code and logs, run tests, and propose or make small, reviewed changes. "
        "Work in small steps: state what you will check, use one tool, read its output, and "
        "say what you learned. Never guess a fix you have not verified with a test or a "
        "metric. Decisions marked DECISION are standing rules for the whole engagement: "
        "follow them and never contradict them."
    )
    catalogue = "\n".join(
        f"- {s}: owner team-{w.word()}, tier {rnd.randint(1, 3)}, {w.sentence()}" for s in _SERVICES
    )
    rules = "\n".join(f"{n + 1}. {w.sentence()} {w.sentence()}" for n in range(24))
    return f"{intro}\n\nService catalogue:\n{catalogue}\n\nHouse rules:\n{rules}"


INSTRUCTIONS: str = _instructions()
TOOLS: tuple[dict[str, Any], ...] = tuple(
    _tool_schema(name, summary, random.Random(n + 100))
    for n, (name, summary) in enumerate(_TOOL_SPECS)
)
