"""What a layer of context declares for the compiler's layer budgets (``layers.py``), and
the meta its blocks carry to say so. Shared data: imports nothing of the compiler."""

from __future__ import annotations

from dataclasses import dataclass

from wakeful.errors import ConfigError

__all__ = [
    "BUILTIN_LAYERS",
    "DOCUMENTS",
    "LAYER_META",
    "PRIORITY_META",
    "SHARE_META",
    "LayerBudget",
    "check_builtin_layers",
    "check_layer",
    "layer_meta",
    "layers_spec",
]

LAYER_META = "layer"  # the layer's name
PRIORITY_META = "layer_priority"  # an int, as text ("0" when only a share was declared)
SHARE_META = "layer_share"  # a fraction of the input budget, as text ("" when none)


@dataclass(frozen=True)
class LayerBudget:
    """What a layer declares: ``priority`` (higher is admitted first when the budget is
    tight; layers without one are 0) and ``budget_share`` (the most of the input budget its
    blocks may take, a fraction in (0, 1]; None: no cap of its own)."""

    priority: int = 0
    budget_share: float | None = None

    def __post_init__(self) -> None:
        check_layer("layer", self.priority, self.budget_share)


def check_layer(where: str, priority: object, budget_share: object) -> None:
    """One line naming what is wrong with a layer's declaration, if anything is."""
    if priority is not None and (isinstance(priority, bool) or not isinstance(priority, int)):
        raise ConfigError(f"{where}: priority must be an integer (got {priority!r})")
    if budget_share is None:
        return
    if (
        isinstance(budget_share, bool)
        or not isinstance(budget_share, int | float)
        or not 0 < budget_share <= 1
    ):
        raise ConfigError(
            f"{where}: budget_share must be a fraction of the window in (0, 1], e.g. 0.2"
            f" (got {budget_share!r})"
        )


def layer_meta(name: str, priority: int | None, budget_share: float | None) -> dict[str, str]:
    """The meta a layer's blocks carry (empty when it declares neither)."""
    if priority is None and budget_share is None:
        return {}
    check_layer(f"layer {name!r}", priority, budget_share)
    return {
        LAYER_META: name,
        PRIORITY_META: str(priority or 0),
        SHARE_META: "" if budget_share is None else repr(float(budget_share)),
    }


DOCUMENTS = "documents"  # the document chunks retrieval brings
BUILTIN_LAYERS = (DOCUMENTS,)


def check_builtin_layers(where: str, layers: object) -> None:
    """One line naming what is wrong with an agent's ``layers``, if anything is."""
    if not isinstance(layers, dict):
        raise ConfigError(
            f"{where}: layers must be a dict of layer name to LayerBudget (got {layers!r})"
        )
    for name, budget in layers.items():
        if name not in BUILTIN_LAYERS:
            raise ConfigError(
                f"{where}: layers names {name!r}; the built-in layers are"
                f" {', '.join(BUILTIN_LAYERS)} (a source declares its own priority and"
                " budget_share)"
            )
        if not isinstance(budget, LayerBudget):
            raise ConfigError(
                f"{where}: layers[{name!r}] is {budget!r}; use LayerBudget(priority=...,"
                " budget_share=...)"
            )


def layers_spec(layers: dict[str, LayerBudget]) -> dict[str, dict[str, object]]:
    """The layers as the agent's spec stores them (sorted by name)."""
    return {
        name: {"priority": layers[name].priority, "budget_share": layers[name].budget_share}
        for name in sorted(layers)
    }


def spec_layer_meta(spec: dict[str, object], name: str) -> dict[str, str]:
    """The meta blocks of the built-in layer ``name`` carry per an agent's spec (none
    declared: empty)."""
    layers = spec.get("layers")
    declared = layers.get(name) if isinstance(layers, dict) else None
    if not isinstance(declared, dict):
        return {}
    priority = declared.get("priority")
    share = declared.get("budget_share")
    return layer_meta(name, priority if isinstance(priority, int) else None, share)
