"""A server that serves itself: ``python -m tests.apps.run_itself PORT [ENGINE]`` calls
``app.run(transport="http", port=PORT)`` (with ``server=ENGINE`` when one is named), for
tests/run/test_server_run.py."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from jetmcp import Server

app = Server("runs-itself")


@app.tool()
def add(a: int, b: int) -> int:
    """The sum of a and b."""
    return a + b


@app.tool()
async def sleep(seconds: float) -> str:
    """Wait ``seconds``, then answer."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


if __name__ == "__main__":
    options: dict[str, Any] = {"server": sys.argv[2]} if len(sys.argv) > 2 else {}
    app.run(transport="http", host="127.0.0.1", port=int(sys.argv[1]), **options)
