"""Exit codes a script can trust: ``wakeful`` run as a process, the way a shell runs it,
against the session's Postgres and Temporal and a stock ``wakeful worker`` process.

The tests share the operations tests' worker process (``stock_worker``: one tenant, task
queue and Edge shard): none needs a worker of its own, and each wakes an agent no other test
sharing it wakes."""

from __future__ import annotations

import json

import pytest
from temporalio.testing import WorkflowEnvironment

from tests.ops.cli_env import (
    DOCUMENTED_EXIT_CODES,
    STOCK_AGENTS,
    shell,
    worker_refuses,
)


@pytest.fixture
def worker(stock_worker: dict[str, str]) -> dict[str, str]:
    """The settings of the operations tests' shared ``wakeful worker`` (``stock_worker``)."""
    return stock_worker


def test_ten_triggers_in_a_shell_loop_all_exit_0(worker: dict[str, str]) -> None:
    """``for i in $(seq 10); do wakeful trigger ...; echo $?; done`` prints only documented
    codes, and here only 0: the Temporal SDK's threads never abort the process at exit
    (``Fatal Python error: PyGILState_Release``, 134) after the wake's output is printed."""
    loop = (
        "for i in $(seq 10); do"
        ' wakeful trigger clerk -m "hello $i" --key "loop-$i"; echo "rc=$?";'
        " done"
    )
    done = shell(loop, worker)
    codes = [int(line[3:]) for line in done.stdout.splitlines() if line.startswith("rc=")]
    assert len(codes) == 10, done.stdout + done.stderr
    assert set(codes) <= DOCUMENTED_EXIT_CODES, (codes, done.stderr)
    assert codes == [0] * 10, (codes, done.stderr)
    assert "Fatal Python error" not in done.stderr
    assert done.stderr.count(" done: ") == 10, done.stderr  # each wake's summary
    answers = [line for line in done.stdout.splitlines() if not line.startswith("rc=")]
    assert answers == [f"You said: hello {i}" for i in range(1, 11)], done.stdout


def test_a_stock_worker_serves_a_responses_api_agent(worker: dict[str, str]) -> None:
    """An agent on ``openai_responses`` (the compiler's name for OpenAI's Responses API) is
    served by ``wakeful worker`` as it stands: its wake goes through the OpenAI SDK's
    Responses client to the simulator and completes."""
    done = shell("wakeful trigger scribe -m 'hello' --key r-1 --timeout 60 --json", worker)
    assert done.returncode == 0, done.stdout + done.stderr
    body = json.loads(done.stdout)
    assert (body["status"], body["model_calls"]) == ("done", 1), body


async def test_a_trigger_to_a_workflow_failing_its_tasks_is_one_line_and_exit_3(
    worker: dict[str, str], temporal_dev: WorkflowEnvironment
) -> None:
    """An agent whose workflow fails every workflow task (here its input cannot be decoded:
    it was started by hand without a runtime's provider and model) cannot take a trigger.
    ``wakeful trigger`` says so in one line, naming the workflow, and exits 3. (The agent is
    ``tally``, which no other test here wakes, so its workflow is not running before.)"""
    from wakeful.workflows.state import workflow_id

    tenant = worker["WAKEFUL_TENANT"]
    wf = workflow_id(tenant, "tally")
    await temporal_dev.client.start_workflow(
        "AgentWorkflow",
        {"runtime": {"tenant": tenant, "name": "tally"}},
        id=wf,
        task_queue=worker["WAKEFUL_TASK_QUEUE"],
    )
    try:
        done = shell("wakeful trigger tally -m hello --key broken-1 --timeout 60", worker)
    finally:
        await temporal_dev.client.get_workflow_handle(wf).terminate("test over")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 3, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    assert lines[-1].startswith("error: "), done.stderr
    assert wf in lines[-1], lines[-1]


def test_a_second_worker_on_a_held_shard_is_refused_at_start(worker: dict[str, str]) -> None:
    """Two workers on one Edge shard would each index only what it happened to see: a second
    ``wakeful worker`` with the shared worker's settings (so its shard, which that worker
    holds while it serves) is refused before it polls, in one line naming the way out."""
    said = worker_refuses(STOCK_AGENTS, worker)
    assert "Qdrant Edge shard is open in another process" in said, said
    assert "WAKEFUL_QDRANT_PATH" in said and "WAKEFUL_QDRANT_URL" in said, said
