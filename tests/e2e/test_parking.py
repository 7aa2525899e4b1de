"""A poisoned trigger is parked with its error instead of being retried forever."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tests.e2e.harness import RunWakes, message
from wakeful.agents import Agent
from wakeful.substrate.store import Store
from wakeful.worker.serve import register_agent


async def test_a_compile_that_can_never_succeed_parks_the_wake_and_the_agent_goes_on(
    store: Store, agent: Agent, tmp_path: Path, run_wakes: RunWakes
) -> None:
    # A window too small for the agent's own instructions fails every compile the same way:
    # no retry can help. (An unknown policy name no longer gets this far: the worker refuses
    # to start with it.)
    tiny = tmp_path / "tiny.toml"
    tiny.write_text('name = "tiny"\n[budget]\ncontext_limit = 260\noutput_reserve = 200\n')
    broken = dataclasses.replace(agent, policy=str(tiny))
    register_agent(store.tenant(broken.tenant), broken)
    first, second = await run_wakes(broken, message("list_dir ."), message("read_file README.md"))

    assert (first.status, first.model_calls) == ("parked", 0)
    assert first.error.startswith("BudgetError: cannot fit") and "context_limit 260" in first.error
    # The workflow is still serving: the next trigger got its own wake (parked the same way).
    assert (second.status, second.number) == ("parked", first.number + 1)
    ts = store.tenant(broken.tenant)
    assert [w.status for w in ts.wakes(broken.name)] == ["parked", "parked"]
    assert ts.model_calls(first.wake_id) == []
