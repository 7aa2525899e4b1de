"""Consolidation: rewrite old history into summaries without losing a load-bearing fact.

The pure rules live here (no I/O, no clock — ``now`` is always an argument):

* :mod:`.spans`    which history to rewrite: turn spans, session and period rollups;
* :mod:`.rules`    promotion of constraints and decisions into the registry;
* :mod:`.facts`    ``subject is value`` facts, keyed for supersession;
* :mod:`.gate`     the fail-closed quality gate, with :mod:`.probes`;
* :mod:`.hygiene`  deltas, superseded marks, staleness and decay of memories;
* :mod:`.dream`    merging near-duplicate memories with capped rewrite loss;
* :mod:`.prompt`   the summarisation request.

The workflow is :mod:`wakeful.workflows.consolidation`, the activities
:mod:`wakeful.activities.consolidate`, and the schedules :mod:`.schedule` (the one module
here that talks to a server, imported on its own).
"""

from wakeful.consolidation.contracts import ConsolidationInput, ConsolidationResult
from wakeful.consolidation.dream import MergeProposal, check_rewrite, merge, rewrite_loss
from wakeful.consolidation.facts import Fact, extract_facts, parse_fact
from wakeful.consolidation.gate import GateInput, GateResult, run_gate
from wakeful.consolidation.hygiene import Delta, MemoryView, annotate, decay, deltas, reverify
from wakeful.consolidation.items import SpanItem
from wakeful.consolidation.policy import ConsolidationPolicy
from wakeful.consolidation.probes import Probe, probes_for
from wakeful.consolidation.prompt import build_prompt, request_body
from wakeful.consolidation.rules import Promotion, Revocation, promotions
from wakeful.consolidation.spans import Span, plan_rollups, select_spans

__all__ = [
    "ConsolidationInput",
    "ConsolidationPolicy",
    "ConsolidationResult",
    "Delta",
    "Fact",
    "GateInput",
    "GateResult",
    "MemoryView",
    "MergeProposal",
    "Probe",
    "Promotion",
    "Revocation",
    "Span",
    "SpanItem",
    "annotate",
    "build_prompt",
    "check_rewrite",
    "decay",
    "deltas",
    "extract_facts",
    "merge",
    "parse_fact",
    "plan_rollups",
    "probes_for",
    "promotions",
    "request_body",
    "reverify",
    "rewrite_loss",
    "run_gate",
    "select_spans",
]
