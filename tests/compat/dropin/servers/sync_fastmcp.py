"""A fastmcp server with synchronous tools, for tests/dropin/test_sync_fastmcp.py: run on
fastmcp 2.14 (mcp 1.x) and 4.x (mcp 2.x), served by jetmcp as fastmcp serves it."""

from __future__ import annotations

import sys
import time

from fastmcp import FastMCP

mcp = FastMCP("sync-fastmcp")


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
