"""Synchronous tools in the thread pool, measured (a benchmark, not a test).

    .venv/bin/python bench/load/sync_tools.py --baseline /path/to/checkout-before

Two rows, each against ``jetmcp run bench.load.sync_app:app --transport http --workers 1
--stateless`` pinned to core 0 (bench/load/sync_app.py: a plain synchronous ``add`` and a
synchronous ``block(seconds)``):

1. plain sync tools: ``jetmcp bench`` (pinned to core 1, closed loop, ``add(1, 2)`` at
   2025-11-25) req/s of this build (``add`` promoted to inline after its first calls: a
   warm-up run precedes the measured one) against the ``--baseline`` checkout's (its own
   ``.venv``: the code before the pool). Goal: >= 0.95x. Also this build with
   ``--sync-tool-promote-after 0`` (every call in the pool), for what the pool costs.
2. a 2 s ``block`` in flight (started first, seen in flight by the server) while 20
   concurrent ``add`` calls are sent: each add's latency, the slowest reported. Goal:
   within 100 ms (before the pool: about 2 s).

Writes bench/results/sync_tools.md. Build the release extension first in both checkouts
(``VIRTUAL_ENV=.venv .venv/bin/maturin develop --release -q``). To make the baseline checkout
from the commit before this change:

    git worktree add /tmp/jetmcp-before <commit> && cd /tmp/jetmcp-before \\
      && python3 -m venv .venv && .venv/bin/pip install -q -r requirements/dev.txt \\
      && VIRTUAL_ENV=.venv .venv/bin/maturin develop --release -q
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
RESULTS = ROOT / "bench" / "results"
VERSION = "2025-11-25"
APP = "bench.load.sync_app:app"
ADD = ["--tool", "add", "--args", '{"a": 1, "b": 2}', "--revision", VERSION]
HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": VERSION,
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def jetmcp_of(checkout: Path) -> list[str]:
    script = checkout / ".venv" / "bin" / "jetmcp"
    if script.exists():
        return [str(script)]
    return [str(checkout / ".venv" / "bin" / "python"), "-m", "jetmcp"]


#: ``--server ENGINE`` for this build's servers (``--engine``); the baseline gets none.
ENGINE: list[str] = []


class Server:
    def __init__(self, checkout: Path, *extra: str) -> None:
        if checkout == ROOT:
            extra = (*ENGINE, *extra)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.proc = subprocess.Popen(
            ["taskset", "-c", "0", *jetmcp_of(checkout), "run", APP, "--transport", "http",
             "--workers", "1", "--stateless", "--port", str(self.port), *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            env=env, cwd=ROOT,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.post(self.url, content=_call(0, "add", {"a": 1, "b": 2}), headers=HEADERS)
                return
            except httpx.HTTPError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("the server did not start")

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(self.proc.pid, signal.SIGKILL)


def _call(id: int, name: str, arguments: dict[str, Any]) -> bytes:
    body = {"jsonrpc": "2.0", "id": id, "method": "tools/call"}
    body["params"] = {"name": name, "arguments": arguments}  # type: ignore[assignment]
    return json.dumps(body).encode()


def bench(url: str, connections: int, seconds: int) -> float:
    done = subprocess.run(
        ["taskset", "-c", "1", *jetmcp_of(ROOT), "bench", url, *ADD, "-q", "--json", "-",
         "-c", str(connections), "-d", str(seconds)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    if not done.stdout.strip():
        raise RuntimeError(f"jetmcp bench failed: {done.stderr[-400:]}")
    data: dict[str, Any] = json.loads(done.stdout)
    return float(data["requests_per_s"])


def plain_rps(checkout: Path, connections: int, seconds: int, *extra: str) -> float:
    server = Server(checkout, *extra)
    try:
        bench(server.url, connections, 2)  # warm-up (and promotion)
        return bench(server.url, connections, seconds)
    finally:
        server.stop()


def adds_during_block(checkout: Path) -> tuple[float, float]:
    """The slowest of 20 concurrent adds' latencies (ms) while a 2 s block runs, and the
    block's own (ms)."""
    server = Server(checkout)
    try:
        with (
            httpx.Client(timeout=30, limits=httpx.Limits(max_connections=32)) as client,
            concurrent.futures.ThreadPoolExecutor(24) as pool,
        ):
            # Connections opened first, so the adds' latencies do not count a handshake.
            list(pool.map(lambda i: client.post(server.url, content=_call(i, "add",
                 {"a": i, "b": 1}), headers=HEADERS), range(21)))  # fmt: skip

            def timed(body: bytes) -> float:
                start = time.perf_counter()
                resp = client.post(server.url, content=body, headers=HEADERS)
                assert resp.status_code == 200, resp.text
                return (time.perf_counter() - start) * 1000

            slow = pool.submit(timed, _call(99, "block", {"seconds": 2}))
            time.sleep(0.2)  # the block is in flight (it lasts 2 s)
            adds = list(pool.map(timed, [_call(i, "add", {"a": i, "b": 1}) for i in range(20)]))
            return max(adds), slow.result()
    finally:
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", type=Path, help="a checkout from before the pool")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument(
        "--engine", choices=("native", "granian"), help="this build's HTTP engine (--server)"
    )
    args = parser.parse_args()
    if args.engine:
        ENGINE[:] = ["--server", args.engine]
    rows: list[tuple[str, str, str]] = []
    after = plain_rps(ROOT, args.connections, args.seconds)
    # The same build with the pool off: every sync tool inline on the loop, as before the pool.
    off = plain_rps(ROOT, args.connections, args.seconds, "--sync-tool-threads", "0")
    rows.append(("plain sync `add`, req/s: pool off (as before it) vs promoted",
                 f"off {off:,.0f}, promoted {after:,.0f}",
                 f"{after / off:.3f}x (goal >= 0.95x)"))  # fmt: skip
    pooled = plain_rps(ROOT, args.connections, args.seconds, "--sync-tool-promote-after", "0")
    if args.baseline is not None:
        before = plain_rps(args.baseline, args.connections, args.seconds)
        rows.append(("plain sync `add`, req/s: the baseline checkout vs this build",
                     f"before {before:,.0f}, after {after:,.0f}",
                     f"{after / before:.3f}x"))  # fmt: skip
    rows.append(("the same, every call in the pool (promote-after 0)", f"{pooled:,.0f}",
                 f"{pooled / after:.3f}x of promoted"))  # fmt: skip
    slowest, block = adds_during_block(ROOT)
    rows.append(("20 concurrent `add` during a 2 s sync tool: slowest", f"{slowest:.1f} ms",
                 f"goal <= 100 ms (the 2 s tool: {block:.0f} ms)"))  # fmt: skip
    if args.baseline is not None:
        slowest_before, _ = adds_during_block(args.baseline)
        rows.append(("the same, before the pool", f"{slowest_before:.1f} ms", ""))
    lines = [
        "# Synchronous tools in the thread pool",
        "",
        f"`{' '.join(['.venv/bin/python', 'bench/load/sync_tools.py', *sys.argv[1:]])}`",
        "",
        "Command for the final numbers (quiet machine, release builds in both checkouts):",
        "`.venv/bin/python bench/load/sync_tools.py --baseline /tmp/jetmcp-before` "
        "(see the script's docstring for making the baseline checkout).",
        "",
        "| row | measured | against the goal |",
        "|---|---|---|",
        *(f"| {a} | {b} | {c} |" for a, b, c in rows),
        "",
    ]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "sync_tools.md").write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
