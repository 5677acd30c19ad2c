"""A console script that imports its framework only when ``main()`` runs (mcp 1.x
``FastMCP``): nothing of the SDK is imported when ``jetmcp run lazy_v1:main`` imports this
module, so the server can only be captured as the program imports ``FastMCP``."""

from __future__ import annotations

import sys


def main() -> None:
    from mcp.server.fastmcp import FastMCP

    assert "--greeting" in sys.argv, sys.argv
    greeting = sys.argv[sys.argv.index("--greeting") + 1]
    mcp = FastMCP("lazy-v1", instructions="Greets.")

    @mcp.tool()
    def greet(name: str) -> str:
        """Greet someone."""
        return f"{greeting}, {name}!"

    mcp.run()
