"""``jetmcp bench``: a load generator for any MCP server, over Streamable HTTP or stdio.

Closed loop or open model (``--rate``, latency from each request's scheduled time), rate
ramps and ``--find-max``, scenarios of virtual users, several generator processes merged
into one report; latencies in HDR histograms (the extension's ``Histogram``); reports as
text, JSON, CSV and a self-contained HTML page; thresholds for CI and ``compare``.

Modules: ``runner`` (one run), ``generator`` (the closed loop and the open model),
``connections`` (HTTP and stdio protocols), ``messages`` (negotiation and request
templates), ``recorder`` (histograms and counts), ``schedule`` (ramps, ``--find-max``),
``scenario`` (virtual users), ``report``, ``html``, ``compare`` (thresholds and
``compare``), ``progress`` and ``cli``.
"""

from jetmcp.bench.report import Report
from jetmcp.bench.runner import BenchOptions, run_bench

__all__ = ["BenchOptions", "Report", "run_bench"]
