"""The public names of the operations modules: ``__all__`` is exact and every name exists."""

from __future__ import annotations

import inspect

import pytest

from tests.ops.module_exports import listed_exports

MODULES = [
    "wakeful.redaction",
    "wakeful.worker.ingress",
    "wakeful.worker.ingress_approvers",
    "wakeful.worker.ingress_auth",
    "wakeful.worker.ingress_events",
    "wakeful.worker.ingress_json",
    "wakeful.worker.ingress_receipts",
    "wakeful.worker.ingress_probe",
]


@pytest.mark.parametrize("name", MODULES)
def test_all_lists_exactly_the_public_definitions(name: str) -> None:
    module, names = listed_exports(name)
    exported = set(names)
    defined = {
        n
        for n, obj in vars(module).items()
        if not n.startswith("_")
        and (inspect.isfunction(obj) or inspect.isclass(obj))
        and obj.__module__ == name
    }
    assert defined - exported == set(), f"public but not exported: {defined - exported}"
