"""The app of bench/load/workers.py: the request-shape tools ``add`` and ``scale`` (those of
``jetmcp_server.py``) and ``spin``, a CPU-bound tool (``rounds`` of integer arithmetic, ~150 µs
at the default) for a workload where the server's work dominates the load generator's.

    jetmcp run bench/load/workers_app.py:app --transport http --workers 2 --stateless
"""

from __future__ import annotations

# This file's folder is on sys.path under `jetmcp run` (and beside it in bench/load).
from jetmcp_server import add, scale

from jetmcp.server import Server

app = Server("jetmcp-workers", version="0.1.0")
app.tool()(add)
app.tool()(scale)


@app.tool()
async def spin(rounds: int) -> int:
    """Burn CPU on the event loop: ``rounds`` steps of a linear congruential sequence."""
    value = 1
    for _ in range(rounds):
        value = (value * 1103515245 + 12345) & 0x7FFFFFFF
    return value


__all__ = ["app"]
