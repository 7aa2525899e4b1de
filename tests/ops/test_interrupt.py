"""Ctrl-C on a ``wakeful trigger`` that waits for its wake: one line, exit 130, as the CLI's
exit codes promise; the wake goes on (Ctrl-C stops the waiting, not the wake)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

from temporalio.client import Client

from tests.ops.cli_env import ROOT, run
from tests.signals import default_sigint
from wakeful.workflows.agent import AgentWorkflow, workflow_id

TRIGGER = (sys.executable, "-m", "wakeful.cli.main", "trigger")


def waits_for(pending: Callable[[], str], within_s: float = 120) -> None:
    """Return once the agent's wake waits for an approval (``within_s`` is a failure
    timeout, not a sync point)."""
    deadline = time.monotonic() + within_s
    while json.loads(pending() or "[]") == []:
        assert time.monotonic() < deadline, "the wake never asked for an approval"
        time.sleep(0.2)


async def _stop(address: str, tenant: str) -> None:
    """Let the wake go: a stop ends the approval's wait."""
    client = await Client.connect(address)
    await client.get_workflow_handle(workflow_id(tenant, "gatekeeper")).signal(AgentWorkflow.stop)


def test_ctrl_c_on_a_waiting_trigger_prints_one_line_and_exits_130(
    stock_worker: dict[str, str],
) -> None:
    env = stock_worker  # a `wakeful worker` serving gatekeeper, which no other test wakes
    # The planner calls ``ship``, which waits for an approval nobody gives: the wake
    # stays open for as long as the test needs, holding no worker.
    trigger = subprocess.Popen(
        [*TRIGGER, "gatekeeper", "--message", "ship service=billing"],
        env=os.environ | env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    first = ""
    try:
        assert trigger.stderr is not None
        first = trigger.stderr.readline()  # said once it waits for the wake
        assert first.startswith("waiting for the wake of 'gatekeeper'"), (
            first + trigger.communicate(timeout=60)[1]
        )
        waits_for(lambda: run(["approvals", "list", "gatekeeper", "--json"], env).stdout)
        trigger.send_signal(signal.SIGINT)
        out, rest = trigger.communicate(timeout=60)
    finally:
        if trigger.poll() is None:
            trigger.kill()
            trigger.communicate()
        if first.startswith("waiting"):
            asyncio.run(_stop(env["WAKEFUL_TEMPORAL_ADDRESS"], env["WAKEFUL_TENANT"]))
    assert trigger.returncode == 130, first + rest
    assert (out, rest) == ("", "interrupted\n"), first + rest
