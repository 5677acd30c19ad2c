"""A console script that imports its framework only when ``main()`` runs (mcp 2.x
``MCPServer``): nothing of the SDK is imported when ``jetmcp run lazy_v2:main`` imports this
module, so the server can only be captured as the program imports ``MCPServer``."""

from __future__ import annotations

import sys


def main() -> None:
    from mcp.server.mcpserver import MCPServer

    assert "--greeting" in sys.argv, sys.argv
    greeting = sys.argv[sys.argv.index("--greeting") + 1]
    mcp = MCPServer("lazy-v2", instructions="Greets.")

    @mcp.tool()
    def greet(name: str) -> str:
        """Greet someone."""
        return f"{greeting}, {name}!"

    mcp.run()
