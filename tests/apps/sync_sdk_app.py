"""An official SDK 2.x ``MCPServer`` with synchronous tools (lifted by jetmcp's adapter), for
tests/test_sync_tools.py: a slow one must not hold up the others, as on the SDK itself."""

from __future__ import annotations

import sys
import time

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("sync-sdk")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool()
def sleep(seconds: float) -> str:
    """Block for ``seconds`` (time.sleep), then say so; stderr tells when it starts."""
    sys.stderr.write(f"sleep {seconds} started\n")
    sys.stderr.flush()
    time.sleep(seconds)
    return f"slept {seconds}"
