"""Wakeful as a Temporal plugin: its agents on a team's own client and worker.

A team that already runs Temporal adds Wakeful to the worker it has, next to its own
workflows, instead of running ``wakeful worker`` beside it. ``wakeful worker`` builds its
client and worker with the same plugin.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import temporalio.client
import temporalio.worker
from temporalio.contrib.pydantic import PydanticPayloadConverter
from temporalio.converter import DataConverter, DefaultPayloadConverter
from temporalio.plugin import SimplePlugin
from temporalio.worker import UnsandboxedWorkflowRunner, WorkerConfig, WorkflowRunner

from wakeful.activities.deps import ActivityDeps, check_policy
from wakeful.errors import ConfigError
from wakeful.worker.codec import data_converter
from wakeful.worker.components import WORKFLOWS, activities
from wakeful.worker.runner import context_free_runner

__all__ = ["WakefulPlugin"]

# Payload converters Wakeful's replaces without loss: its own is Temporal's default with
# pydantic JSON (compact for Wakeful's messages, the same JSON for any other value).
_REPLACEABLE = (DefaultPayloadConverter, PydanticPayloadConverter)


def wakeful_converter(existing: DataConverter | None) -> DataConverter:
    """The client's data converter with Wakeful's payload converter and codec.

    A default or pydantic converter without a codec is replaced (keeping its failure
    converter and external storage); any other is refused, since Wakeful's workflows could
    not read their own payloads through it."""
    if existing is None:
        return data_converter
    ours = (data_converter.payload_converter_class, type(data_converter.payload_codec))
    if (existing.payload_converter_class, type(existing.payload_codec)) == ours:
        return existing
    if existing.payload_codec is None and existing.payload_converter_class in _REPLACEABLE:
        return dataclasses.replace(
            existing,
            payload_converter_class=data_converter.payload_converter_class,
            payload_codec=data_converter.payload_codec,
        )
    raise ConfigError(
        "WakefulPlugin cannot combine with the client's own data converter "
        f"({existing.payload_converter_class.__name__}, codec "
        f"{type(existing.payload_codec).__name__}): connect without data_converter, or run "
        "Wakeful's agents on a client of their own"
    )


class WakefulPlugin(SimplePlugin):
    """Wakeful's workflows, activities and data converter for your own Temporal client and
    worker.

    Given to ``Client.connect(..., plugins=[...])`` it sets the client's data converter to
    Wakeful's (pydantic JSON, compressed as ``wakeful/z1`` payloads: see
    :mod:`wakeful.worker.codec`), and every ``Worker`` built on that client serves Wakeful's
    workflows and activities besides its own, on its task queue::

        deps = ActivityDeps(store=Store.connect(url), agents=registry,
                            providers=ProviderCache(settings), counter=BpeCounter())
        client = await Client.connect("localhost:7233", plugins=[WakefulPlugin(deps)])
        worker = Worker(client, task_queue="my-queue",
                        workflows=[MyWorkflow], activities=[my_activity])
        await worker.run()

    Agents are then woken with ``wakeful.Client(client, task_queue="my-queue")``.

    ``deps`` are what the activities use (the agent registry, the substrate, providers);
    their owner closes them once the worker is done. Sync activities need threads: a worker
    given no ``activity_executor`` gets a pool of ``max_threads`` and, unless it sets its
    own, ``max_concurrent_activities=max_threads`` (``Settings.activity_threads``).
    ``sandboxed=False`` runs every workflow of the worker, yours too, outside Temporal's
    sandbox (``Settings.workflow_sandbox``); by default the worker's runner is kept, wrapped
    so that payloads are encoded without asking each workflow for a serialization context
    when the data converter takes none (:mod:`wakeful.worker.runner`).
    ``interceptors`` (e.g. Temporal's ``TracingInterceptor``) go to the client, and the
    worker-side ones to workers, once each. Wakeful's GenAI spans go to the process's
    global OpenTelemetry providers; ``interceptors=[deps.telemetry.tracing_interceptor()]``
    puts Temporal's workflow and activity spans in the same trace, one tree per wake.
    """

    def __init__(
        self,
        deps: ActivityDeps,
        *,
        max_threads: int = 32,
        sandboxed: bool = True,
        interceptors: Sequence[temporalio.client.Interceptor | temporalio.worker.Interceptor] = (),
    ) -> None:
        if max_threads < 1:
            raise ConfigError(f"max_threads must be at least 1, not {max_threads}")
        for agent in deps.agents:  # refused now, not by every wake of the agent
            try:
                check_policy(deps.policies, agent.policy)
            except ConfigError as exc:
                raise ConfigError(
                    f"agent {agent.name!r} of tenant {agent.tenant!r}: {exc}"
                ) from None
        self.deps, self.max_threads = deps, max_threads
        runner: WorkflowRunner | None = None if sandboxed else UnsandboxedWorkflowRunner()
        super().__init__(
            "wakeful.WakefulPlugin",
            data_converter=wakeful_converter,
            interceptors=list(interceptors) or None,
            activities=activities(deps),
            workflows=WORKFLOWS,
            workflow_runner=runner,
        )

    def configure_worker(self, config: WorkerConfig) -> WorkerConfig:
        """Wakeful's workflows and activities added to the worker's; a thread pool for its
        sync activities (tools, compile, records) when the worker has none."""
        config = super().configure_worker(config)
        if not config.get("debug_mode"):  # a debugger's runner is the SDK's to relax
            # Workflow payloads are encoded without asking each workflow for a context,
            # when the converter takes none (see wakeful.worker.runner).
            converter = config["client"].data_converter
            if (runner := config.get("workflow_runner")) is not None:
                config["workflow_runner"] = context_free_runner(runner, converter)
            if (unsandboxed := config.get("unsandboxed_workflow_runner")) is not None:
                config["unsandboxed_workflow_runner"] = context_free_runner(unsandboxed, converter)
        if config.get("activity_executor") is None:
            config["activity_executor"] = ThreadPoolExecutor(max_workers=self.max_threads)
            if config.get("max_concurrent_activities") is None:
                config["max_concurrent_activities"] = self.max_threads
        return config
