"""The context compiler: a pure function from a substrate snapshot to a model window.

    compile_window(snapshot, goal, policy, now, *, counter) -> CompiledWindow

No I/O, no clock, no randomness: equal inputs give byte-identical requests in any process.
See ``pipeline.py`` for the passes and their order.
"""

from wakeful.compiler.blocks import (
    KIND_SEGMENT,
    AgentProfile,
    Block,
    BlockKind,
    Goal,
    GoalKind,
    Role,
    Segment,
    Snapshot,
    Stability,
    content_hash,
)
from wakeful.compiler.diff import DiffReason, LedgerDiff, diff_ledgers
from wakeful.compiler.ledger import COMPILER_VERSION, Breakpoint, Ledger, LedgerRow
from wakeful.compiler.pipeline import compile_window
from wakeful.compiler.policy import (
    Allocations,
    Budget,
    Cache,
    Eviction,
    Ranking,
    Retrieval,
    Staleness,
    TriggerRule,
    WindowPolicy,
    load_policy,
    load_policy_file,
)
from wakeful.compiler.render import (
    AnthropicRenderer,
    OpenAIChatRenderer,
    OpenAIResponsesRenderer,
    Renderer,
)
from wakeful.compiler.tokens import CountingCache, EstimatingCounter, TokenCounter
from wakeful.compiler.window import CompiledWindow

__all__ = [
    "COMPILER_VERSION",
    "KIND_SEGMENT",
    "AgentProfile",
    "Allocations",
    "AnthropicRenderer",
    "Block",
    "BlockKind",
    "Breakpoint",
    "Budget",
    "Cache",
    "CompiledWindow",
    "CountingCache",
    "DiffReason",
    "EstimatingCounter",
    "Eviction",
    "Goal",
    "GoalKind",
    "Ledger",
    "LedgerDiff",
    "LedgerRow",
    "OpenAIChatRenderer",
    "OpenAIResponsesRenderer",
    "Ranking",
    "Renderer",
    "Retrieval",
    "Role",
    "Segment",
    "Snapshot",
    "Stability",
    "Staleness",
    "TokenCounter",
    "TriggerRule",
    "WindowPolicy",
    "compile_window",
    "content_hash",
    "diff_ledgers",
    "load_policy",
    "load_policy_file",
]
