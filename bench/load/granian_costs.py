"""What each call an RSGI app makes into Granian's scope costs, live (not in process).

In process, the bench harness hands the app plain Python objects for the scope and its
headers, so a header read there costs a dict lookup. Under Granian every ``scope.headers``
read clones the request's header map into a new object, and every value asked for becomes a
new Python string: costs only a live server shows. This measures them, per request, under
load: run as a script, it starts Granian on this module's ``rsgi_app`` (pinned to core 0, the
same flags as the ceiling), drives it with ``wrk`` (core 1) posting the ``call-2026``
workload's body and headers, and prints the mean nanoseconds of each call, measured inside
the worker with ``time.perf_counter_ns`` (so the timer's own cost, the first row, is in
every other row too).

    .venv/bin/python bench/load/granian_costs.py [--seconds 8]

The last row is ``jetmcp._wire.Gate.admit`` (the HTTP lane's check of a usual POST, taught
by ``McpHttpApp._usual`` on the first request), which reads the scope as the lane does.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

LOAD = Path(__file__).resolve().parent
ROOT = LOAD.parent.parent
#: Where the worker leaves its means (set by the script for the server it starts).
OUT_ENV = "GRANIAN_COSTS_OUT"
#: The calls timed, in the order they run on each request.
CALLS = (
    "timer alone",
    "scope.proto, .method, .path",
    "scope.headers",
    "scope.authority",
    "headers.items()",
    '"origin" in headers',
    'headers.get("content-length")',
    'headers.get_all("host")',
    "Gate.admit(scope)",
)
_totals = [0] * len(CALLS)
_count = 0
_lane: Any = None
_REPLY = [("content-type", "application/json")]


def _timed(scope: Any) -> None:
    """Time each call once for this request."""
    global _lane
    clock = time.perf_counter_ns
    t0 = clock()
    t1 = clock()
    _ = (scope.proto, scope.method, scope.path)
    t2 = clock()
    headers = scope.headers
    t3 = clock()
    _ = scope.authority
    t4 = clock()
    headers.items()
    t5 = clock()
    _ = "origin" in headers
    t6 = clock()
    headers.get("content-length")
    t7 = clock()
    headers.get_all("host")
    t8 = clock()
    if _lane is None:
        from jetmcp.server import Server
        from jetmcp.settings import Settings
        from jetmcp.transports.http import McpHttpApp

        _lane = McpHttpApp(Server("granian-costs"), Settings(stateless=True))
        _lane._usual(scope)  # teaches the gate these header values
    gate = _lane._gate
    t9 = clock()
    admitted = gate.admit(scope)
    t10 = clock()
    if admitted is None:
        raise RuntimeError("the gate did not admit the workload's request")
    spent = (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5, t7 - t6, t8 - t7, t10 - t9)
    for i, ns in enumerate(spent):
        _totals[i] += ns


async def rsgi_app(scope: Any, proto: Any) -> None:
    global _count
    await proto()
    _timed(scope)
    _count += 1
    if _count % 10_000 == 0:
        _save()
    proto.response_bytes(200, _REPLY, b"{}")


def _save() -> None:
    """Leave the means so far where the script reads them (a small file, every 10,000)."""
    out = os.environ.get(OUT_ENV)
    if out:
        means = {name: total / _count for name, total in zip(CALLS, _totals, strict=True)}
        Path(out).write_text(json.dumps({"requests": _count, "ns": means}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--port", type=int, default=8999)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(LOAD))
    from bodies import REQUEST_SHAPES

    workload = REQUEST_SHAPES["call-2026"]
    venv = Path(sys.executable).parent
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "means.json"
        body = Path(tmp) / "body"
        body.write_bytes(workload.body)
        headers = Path(tmp) / "headers"
        headers.write_text("".join(f"{k}: {v}\n" for k, v in workload.headers.items()))
        server = subprocess.Popen(
            [
                *("taskset", "-c", "0", str(venv / "granian")),
                *("--interface", "rsgi", "--http", "1", "--no-ws", "--loop", "uvloop"),
                *("--workers", "1", "--log-level", "warning", "--host", "127.0.0.1"),
                *("--port", str(args.port), "--working-dir", str(LOAD)),
                "granian_costs:rsgi_app",
            ],
            env={**os.environ, OUT_ENV: str(out)},
            start_new_session=True,
        )
        try:
            time.sleep(3)
            env = {
                **os.environ,
                "BENCH_BODY_FILE": str(body),
                "BENCH_PROTOCOL_VERSION": "",
                "BENCH_HEADERS_FILE": str(headers),
            }
            subprocess.run(
                [
                    *("taskset", "-c", "1", "wrk", "-t1", "-c32"),
                    f"-d{max(1, round(args.seconds))}s",
                    *("-s", str(LOAD / "wrk_post.lua"), f"http://127.0.0.1:{args.port}/mcp"),
                ],
                env=env,
                capture_output=True,
                check=True,
            )
            result = json.loads(out.read_text())
        finally:
            os.killpg(server.pid, 15)
            server.wait(10)
    print(f"Granian's scope, live: mean ns per request over {result['requests']:,} requests")
    print()
    print("| call | ns |")
    print("|---|---:|")
    for name, ns in result["ns"].items():
        print(f"| `{name}` | {ns:,.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
