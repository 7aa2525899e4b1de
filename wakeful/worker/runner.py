"""A workflow runner that answers the SDK's serialization-context questions itself.

For every payload of every workflow activation and completion, Temporal's worker asks the
workflow instance which serialization context the payload belongs to (the workflow's, or
one activity's, child's or signal's: ``WorkflowInstance.get_serialization_context``), and
which external-storage context (``get_external_store_context``), then gives the payload to
the data converter as made for that context. A payload is visited three times on each
way, and in Temporal's sandbox each question is ``exec`` of a code string inside the
sandbox: about a tenth of a worker's CPU per wake (``wakeful bench fleet``).

A data converter none of whose parts take a context (``DataConverter.with_context``
returns the converter itself) and with no external storage encodes every payload the same
whatever the context: the answers are never used. :func:`context_free_runner` then wraps
the worker's runner so that its instances answer without asking the workflow (no context;
no storage target), and leaves everything else (activations, the sandbox, deadlock
detection) to the runner it wraps. A converter that does use contexts keeps the runner as
it is.
"""

from __future__ import annotations

from collections.abc import Sequence

from temporalio.bridge.proto.workflow_activation import WorkflowActivation
from temporalio.bridge.proto.workflow_completion import WorkflowActivationCompletion
from temporalio.converter import (
    DataConverter,
    SerializationContext,
    StorageDriverStoreContext,
    WorkflowSerializationContext,
)
from temporalio.worker import WorkflowInstance, WorkflowInstanceDetails, WorkflowRunner
from temporalio.workflow import Info, _Definition

__all__ = ["ContextFreeRunner", "context_free_runner", "takes_context"]


def takes_context(converter: DataConverter) -> bool:
    """Whether ``converter`` encodes differently by serialization context, or stores
    payloads externally (so an external-storage context matters)."""
    probe = WorkflowSerializationContext(namespace="", workflow_id="")
    return converter.external_storage is not None or converter.with_context(probe) is not converter


def context_free_runner(runner: WorkflowRunner, converter: DataConverter) -> WorkflowRunner:
    """``runner`` wrapped in a :class:`ContextFreeRunner` when ``converter`` takes no
    context; else ``runner`` itself."""
    if takes_context(converter) or isinstance(runner, ContextFreeRunner):
        return runner
    return ContextFreeRunner(runner)


class ContextFreeRunner(WorkflowRunner):
    """``inner``'s workflow instances, answering the context questions without running any
    workflow code. Only for a data converter that takes no context (see
    :func:`context_free_runner`)."""

    def __init__(self, inner: WorkflowRunner) -> None:
        self.inner = inner

    def prepare_workflow(self, defn: _Definition) -> None:
        self.inner.prepare_workflow(defn)

    def create_instance(self, det: WorkflowInstanceDetails) -> WorkflowInstance:
        return _ContextFreeInstance(self.inner.create_instance(det))

    def set_worker_level_failure_exception_types(
        self, types: Sequence[type[BaseException]]
    ) -> None:
        self.inner.set_worker_level_failure_exception_types(types)


class _ContextFreeInstance(WorkflowInstance):
    def __init__(self, inner: WorkflowInstance) -> None:
        self.inner = inner

    def activate(self, act: WorkflowActivation) -> WorkflowActivationCompletion:
        return self.inner.activate(act)

    def get_serialization_context(self, command_info: object) -> SerializationContext | None:
        # None: the worker's context-free converter, which is the converter itself.
        return None

    def get_external_store_context(self, command_info: object) -> StorageDriverStoreContext:
        return StorageDriverStoreContext(target=None)

    def get_info(self) -> Info:
        return self.inner.get_info()

    def get_thread_id(self) -> int | None:
        return self.inner.get_thread_id()
