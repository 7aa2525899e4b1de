"""A FastMCP server for the MCP tests, run over stdio with the test's Python.

``CALC_SCHEMA=2`` gives ``add`` a third parameter (a server whose schema changed between
wakes); ``grow`` adds a tool while the server runs (a tool list that changes mid-wake).
"""

from __future__ import annotations

import os

from mcp.server.fastmcp import FastMCP

server = FastMCP("calc")

if os.environ.get("CALC_SCHEMA") == "2":

    @server.tool()
    def add(a: int, b: int, c: int = 0) -> int:
        """Add the numbers."""
        return a + b + c

else:

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b


@server.tool()
def divide(a: float, b: float) -> float:
    """Divide a by b."""
    return a / b


@server.tool()
def grow() -> str:
    """Add a tool named 'later' to this server."""

    def later() -> str:
        """A tool added while the server runs."""
        return "later"

    server.add_tool(later)
    return "added 'later'"


if __name__ == "__main__":
    server.run()
