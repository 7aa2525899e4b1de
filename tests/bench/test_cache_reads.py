"""Written-never-read accounting on hand-built request sequences billed by the simulator."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from benchmarks.cache_reads import ReadTracker
from wakeful.providers.anthropic import usage_from_anthropic
from wakeful.providers.base import Usage
from wakeful.testing.simulator import ManualClock
from wakeful.testing.simulator.core import Simulator
from wakeful.testing.simulator.script import Script, Step

MODEL = "claude-sonnet-4-6"  # 1,024-token minimum cacheable prefix
SYSTEM = "You keep notes. " + " ".join(f"rule{n} applies" for n in range(700))


def _text(text: str, ttl: str | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": text}
    if ttl:
        block["cache_control"] = {"type": "ephemeral", "ttl": ttl}
    return block


def _request(*user: str, system: str = SYSTEM, system_ttl: str | None = None) -> dict[str, Any]:
    """One user message of ``user`` blocks, the last one a 5-minute breakpoint."""
    content = [_text(t) for t in user[:-1]] + [_text(user[-1], "5m")]
    return {
        "model": MODEL,
        "max_tokens": 64,
        "system": [_text(system, system_ttl)],
        "messages": [{"role": "user", "content": content}],
    }


class Billing:
    """Sends requests to the simulator on a manual clock and feeds the tracker."""

    def __init__(self) -> None:
        self.clock = ManualClock()
        self.sim = Simulator(script=Script(steps=[Step(text="ok")] * 50), clock=self.clock)
        self.tracker = ReadTracker()
        self.usages: list[Usage] = []

    def send(self, request: dict[str, Any], *, after: float = 10.0) -> Usage:
        self.clock.advance(after)
        status, body, _ = self.sim.anthropic_messages({"x-api-key": "reads"}, request)
        assert status == 200, body
        usage = usage_from_anthropic(anthropic.types.Usage.model_validate(body["usage"]))
        self.tracker.observe(request, usage)
        self.usages.append(usage)
        return usage


def test_a_write_that_a_later_request_reads_is_read() -> None:
    b = Billing()
    first = b.send(_request("Day one notes."))
    assert first.cache_creation_input_tokens > 1024 and first.cache_read_input_tokens == 0
    second = b.send(_request("Day one notes.", "And a follow-up question."))
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens
    # Only the second request's own write (never followed by a read) is unread.
    assert b.tracker.written_tokens == sum(u.cache_creation_input_tokens for u in b.usages)
    assert b.tracker.never_read_tokens == second.cache_creation_input_tokens
    assert 0 < b.tracker.never_read_share < 0.05


def test_a_write_whose_prefix_changed_is_never_read() -> None:
    b = Billing()
    first = b.send(_request("Evidence: A.", "Question one."))
    # The first user block changed: the system prompt is still the same bytes, but no
    # breakpoint sits on it, so nothing of the first write can be read.
    second = b.send(_request("Evidence: B.", "Question one."))
    assert second.cache_read_input_tokens == 0
    assert b.tracker.never_read_tokens == b.tracker.written_tokens
    assert b.tracker.written_tokens == (
        first.cache_creation_input_tokens + second.cache_creation_input_tokens
    )


def test_only_the_part_of_a_write_before_the_change_is_read() -> None:
    b = Billing()
    first = b.send(_request("Evidence: A.", "Question one.", system_ttl="1h"))
    second = b.send(_request("Evidence: B.", "Question one.", system_ttl="1h"))
    system_prefix = second.cache_read_input_tokens
    assert 0 < system_prefix < first.cache_creation_input_tokens
    unread_of_first = first.cache_creation_input_tokens - system_prefix
    assert b.tracker.never_read_tokens == unread_of_first + second.cache_creation_input_tokens


def test_an_expired_write_stays_unread_though_its_rewrite_is_read() -> None:
    b = Billing()
    first = b.send(_request("Day one notes."))
    # Past the 5-minute TTL: the same prefix misses and is written again.
    again = b.send(_request("Day one notes."), after=6 * 60)
    assert again.cache_read_input_tokens == 0
    assert again.cache_creation_input_tokens == first.cache_creation_input_tokens
    third = b.send(_request("Day one notes.", "More."))
    assert third.cache_read_input_tokens == first.cache_creation_input_tokens
    # The rewrite was read; the first write was not, and neither was the third's.
    assert b.tracker.never_read_tokens == (
        first.cache_creation_input_tokens + third.cache_creation_input_tokens
    )


def test_an_hour_long_system_breakpoint_survives_an_idle_gap() -> None:
    b = Billing()
    first = b.send(_request("Session one.", system_ttl="1h"))
    second = b.send(_request("Session one.", "Back after a break.", system_ttl="1h"), after=900)
    assert 0 < second.cache_read_input_tokens < first.cache_creation_input_tokens
    conversation = first.cache_creation_input_tokens - second.cache_read_input_tokens
    assert b.tracker.never_read_tokens == conversation + second.cache_creation_input_tokens


def test_a_request_other_than_the_billed_one_is_refused() -> None:
    b = Billing()
    b.send(_request("Day one notes."))
    usage = b.send(_request("Day one notes.", "Next."))
    with pytest.raises(ValueError, match="not on a block boundary"):
        b.tracker.observe(_request("Something else entirely, much shorter."), usage)
