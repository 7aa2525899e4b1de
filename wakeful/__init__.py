"""Wakeful: durable, long-running LLM agents on Temporal.

The public API is what this package exports::

    from wakeful import Agent, AgentRegistry, Client, ToolContext, ToolRetry, tool

Names are imported on first use (PEP 562), so ``import wakeful`` stays light: the Temporal
SDK, the substrate and the providers load only with what needs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wakeful.lazy import lazy_exports

if TYPE_CHECKING:
    from wakeful.activities.tools import RetryableToolError
    from wakeful.agents import Agent, AgentRegistry, Delegation, Tool, ToolContext
    from wakeful.contracts import WakeResult
    from wakeful.errors import (
        BudgetError,
        ConfigError,
        PolicyError,
        ProviderError,
        RuntimeFailure,
        StackError,
        StoreError,
        UnknownAgentError,
        UserError,
        WakefulError,
    )
    from wakeful.mcp_tools import McpServer
    from wakeful.typed_tools import ToolRetry, tool
    from wakeful.worker.client import Client, WakeHandle
    from wakeful.worker.plugin import WakefulPlugin
    from wakeful.worker.streaming import TextDelta, ToolCallEvent, WakeFinished

# Public name -> the module defining it.
_EXPORTS: dict[str, str] = {
    "Agent": "wakeful.agents",
    "AgentRegistry": "wakeful.agents",
    "Delegation": "wakeful.agents",
    "Tool": "wakeful.agents",
    "ToolContext": "wakeful.agents",
    "tool": "wakeful.typed_tools",
    "ToolRetry": "wakeful.typed_tools",
    "RetryableToolError": "wakeful.activities.tools",
    "WakeResult": "wakeful.contracts",
    "WakefulError": "wakeful.errors",
    "UserError": "wakeful.errors",
    "ConfigError": "wakeful.errors",
    "PolicyError": "wakeful.errors",
    "UnknownAgentError": "wakeful.errors",
    "RuntimeFailure": "wakeful.errors",
    "BudgetError": "wakeful.errors",
    "StackError": "wakeful.errors",
    "StoreError": "wakeful.errors",
    "ProviderError": "wakeful.errors",
    "Client": "wakeful.worker.client",
    "McpServer": "wakeful.mcp_tools",
    "WakeHandle": "wakeful.worker.client",
    "WakefulPlugin": "wakeful.worker.plugin",
    "TextDelta": "wakeful.worker.streaming",
    "ToolCallEvent": "wakeful.worker.streaming",
    "WakeFinished": "wakeful.worker.streaming",
}

__all__ = [
    "Agent",
    "AgentRegistry",
    "BudgetError",
    "Client",
    "ConfigError",
    "Delegation",
    "McpServer",
    "PolicyError",
    "ProviderError",
    "RetryableToolError",
    "RuntimeFailure",
    "StackError",
    "StoreError",
    "TextDelta",
    "Tool",
    "ToolCallEvent",
    "ToolContext",
    "ToolRetry",
    "UnknownAgentError",
    "UserError",
    "WakeFinished",
    "WakeHandle",
    "WakeResult",
    "WakefulError",
    "WakefulPlugin",
    "tool",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
