"""Layer budgets: a layer of context may declare a priority and a share of the window.

A layer is where blocks come from: a context source (an environment's state, a code map),
or a built-in layer named on the agent (``documents``: the document chunks retrieval
brought). The compile activity stamps each block of a layer that declares either with
its name, priority and share in the block's meta (``layer_budget.layer_meta``; meta is never
rendered), so the compiler reads them from the snapshot alone and a replay reads the same.
A snapshot with no such block compiles exactly as before: the passes here return at once.

Two rules, and the ledger's account of them:

* **A share caps a layer** (before the budget): its candidates are taken in keep order
  (``rank.keep_order``: the ones the budget would take first) while their tokens stay
  within ``floor(budget_share * input_budget)``; each that would pass the cap is excluded
  (``over_layer_share``, rule ``layers.<name>.budget_share``).
* **A higher priority is admitted first** (after the budget, when it was tight): a
  candidate of a layer that the budget left out, while a candidate of a lower-priority
  layer in the same segment was admitted, takes its room: the lower ones give way (lowest
  priority first, the least kept first) as far as they free what it costs, and are
  excluded (``layer_priority``, rule ``layers.<name>.priority``). Only declared layers
  give way to each other: the history, the registry and the rest are never moved for one;
  nor is a layer's block in the history's segment, a retrieved turn that shares a date
  line, or half of a tool pair.
* The ledger's decisions hold one entry per declared layer, ``layers.<name>``: its
  priority and share, what it asked for (its candidates' tokens) and what it got.

Load-bearing blocks and the current wake are mandatory and never capped or moved.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter, contains

from wakeful.compiler.blocks import SEGMENT_ORDER, Segment
from wakeful.compiler.layer_budget import LAYER_META, PRIORITY_META, SHARE_META
from wakeful.compiler.rank import keep_order
from wakeful.compiler.work import Exclusion, Facts, Work
from wakeful.errors import ConfigError

__all__ = ["cap_layers", "prioritise_layers"]


@dataclass
class _Layer:
    name: str
    priority: int
    share: float | None
    members: list[Facts]  # its candidates, in keep order (the best first)
    asked: int = 0
    capped: int = 0  # candidates over its share
    gave_way: int = 0  # candidates that made room for a higher priority


_META = attrgetter("block.meta")


def _stamped(facts: Sequence[Facts]) -> Iterable[bool]:
    """Whether each fact's block names its layer (at C speed: most name none)."""
    return map(contains, map(_META, facts), repeat(LAYER_META))


def _layers(work: Work) -> dict[str, _Layer]:
    """The declared layers of the snapshot's candidates (none: {})."""
    marks = work.part.positions
    snap = marks.snap or ()

    at = marks.of(("meta", LAYER_META), _stamped)
    if not at:
        return {}
    entries = work.part.entries
    out: dict[str, _Layer] = {}
    for f in map(snap.__getitem__, at):
        if f not in entries or work.is_excluded(f):
            continue
        meta = f.block.meta
        name = meta[LAYER_META]
        layer = out.get(name)
        if layer is None:
            try:
                priority = int(meta.get(PRIORITY_META) or 0)
                share = float(meta[SHARE_META]) if meta.get(SHARE_META) else None
            except ValueError:
                raise ConfigError(
                    f"block {f.id!r} of layer {name!r} has a priority or share that is not a"
                    " number; declare them on the source"
                ) from None
            layer = out[name] = _Layer(name, priority, share, [])
        layer.members.append(f)
    for layer in out.values():
        layer.members.sort(key=lambda f: keep_order(work, f))
        layer.asked = sum(map(work.cost, layer.members))
    return out


def cap_layers(work: Work) -> dict[str, _Layer]:
    """Exclude each layer's candidates past its share (see the module docstring); return
    the declared layers, for :func:`prioritise_layers` after the budget."""
    layers = _layers(work)
    total = work.policy.budget.input_budget
    for name in sorted(layers):
        layer = layers[name]
        if layer.share is None:
            continue
        cap = math.floor(layer.share * total)
        used = 0
        for f in layer.members:
            cost = work.cost(f)
            if used + cost <= cap:
                used += cost
                continue
            layer.capped += 1
            work.exclude(
                f,
                Exclusion(
                    "over_layer_share",
                    f"layers.{name}.budget_share",
                    f"layer {name} holds {used} of its {cap} tokens "
                    f"({layer.share:g} of {total}); {cost} more would pass it",
                ),
            )
    return layers


def prioritise_layers(work: Work, layers: dict[str, _Layer]) -> None:
    """After the budget: a declared layer's candidate left out takes the room of admitted
    candidates of lower-priority layers in its segment; then the ledger's account."""
    if not layers:
        return
    admitted = work.admitted
    of: dict[Facts, _Layer] = {f: layer for layer in layers.values() for f in layer.members}
    order = {seg: n for n, seg in enumerate(SEGMENT_ORDER)}
    by_segment: dict[int, list[Facts]] = {}
    part = work.part
    for layer in sorted(layers.values(), key=lambda layer: layer.name):
        for f in layer.members:
            # The history is cut at an anchor and taken whole from there (history.py), a
            # retrieved turn shares its date line, a tool call goes with its result: none
            # of them is moved alone.
            if f.segment is Segment.RECENT or f.group is not None or f in part.partner:
                continue
            by_segment.setdefault(order[f.segment], []).append(f)
    for seg in sorted(by_segment):
        members = by_segment[seg]
        waiting = [f for f in members if f not in admitted and not work.is_excluded(f)]
        waiting.sort(key=lambda f: (-of[f].priority, of[f].name, keep_order(work, f)))
        slack = 0  # tokens freed beyond what the ones admitted so far cost
        for f in waiting:
            mine, cost = of[f], work.cost(f)
            donors = [g for g in members if g in admitted and of[g].priority < mine.priority]
            donors.sort(key=lambda g: (of[g].priority, of[g].name, keep_order(work, g)))
            donors.reverse()  # lowest priority, least kept, last: popped first
            freed, chosen = slack, []
            while freed < cost and donors:
                g = donors.pop()
                chosen.append(g)
                freed += work.cost(g)
            if freed < cost:
                continue
            for g in chosen:
                del admitted[g]
                of[g].gave_way += 1
                work.exclude(
                    g,
                    Exclusion(
                        "layer_priority",
                        f"layers.{of[g].name}.priority",
                        f"gave way to {f.id} of layer {mine.name} "
                        f"(priority {mine.priority} > {of[g].priority})",
                    ),
                )
            slack = freed - cost
            admitted[f] = "layer_priority"
            work.notes[f] = f"layer {mine.name}, priority {mine.priority}: admitted first"
    for name in sorted(layers):
        layer = layers[name]
        got = [f for f in layer.members if f in admitted]
        share = "none" if layer.share is None else f"{layer.share:g}"
        parts = [
            f"priority {layer.priority}, budget_share {share}",
            f"asked {layer.asked} tokens in {len(layer.members)} block(s)",
            f"got {sum(map(work.cost, got))} in {len(got)}",
        ]
        if layer.capped:
            parts.append(f"{layer.capped} over its share")
        if layer.gave_way:
            parts.append(f"{layer.gave_way} gave way to higher priorities")
        work.layers[f"layers.{name}"] = "; ".join(parts)
