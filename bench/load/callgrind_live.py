"""Instructions per request of a live server, counted by callgrind: an A/B measure of the
whole server (Granian, CPython, the extension, pydantic) that a noisy VM's req/s cannot give.

    .venv/bin/python bench/load/callgrind_live.py --server jetmcp --workload pydantic-2026
    .venv/bin/python bench/load/callgrind_live.py --server floor --workload pydantic-2026
    .venv/bin/python bench/load/callgrind_live.py --server ceiling --workload call-0618
    .venv/bin/python bench/load/callgrind_live.py --server native-mcp --workload call-0618
    .venv/bin/python bench/load/callgrind_live.py --server jetmcp-granian --workload call-0618
    .venv/bin/python bench/load/callgrind_live.py --server uvloop-floor --workload call-0618

``jetmcp`` (``jetmcp-native``) is ``jetmcp run`` on its native engine, the default;
``jetmcp-granian`` the same app under ``--server granian``; ``uvloop-floor`` the fixed body
answered by ``uvloop_floor.py`` (an ``asyncio.Protocol`` framing in plain Python).

``native-*`` are the uvloop prototypes of ``native_proto.py`` (the extension's HTTP/1.1
framing answering inside ``data_received``): ``native-fixed`` and ``native-python`` answer
the ceiling's fixed body (framed in Rust, in plain Python), ``native-mcp`` a plain
``tools/call`` through the extension's fast path.

The server runs twice under ``valgrind --tool=callgrind --trace-children=yes`` with the load
benchmark's flags (one worker, HTTP/1, uvloop), answering ``--requests`` and then that many
plus 1,000 sequential requests of the workload's body and headers on one keep-alive
connection. Per request is the difference between the two runs' instruction totals of the
server's processes (Granian's worker does the requests), over 1,000: start-up and shutdown
cancel out. User space only (the kernel's share is not counted) and one request at a time,
so this counts work, not the cache misses of a loaded machine; build the release extension first.

Each process's share is printed to stderr (the worker's is the figure; start-up processes
should show about 0). What runs on a timer (the native engine's timeout watch, the app's
body watch) costs per second, not per request, and valgrind slows the server tens of times:
on a loaded machine the figure rises by several thousand instructions (the same code gave
29,000 and 42,000 at load averages near 9 and 20). Compare rows counted side by side, on a quiet
machine.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LOAD = Path(__file__).resolve().parent
ROOT = LOAD.parents[1]
sys.path.insert(0, str(LOAD))

from bodies import REQUEST_SHAPES  # noqa: E402

BIN = Path(sys.executable).parent
STEP = 1000


def command(server: str, port: int) -> list[str]:
    """The load benchmark's command for ``server`` (see peers.py)."""
    engines = {"jetmcp": "native", "jetmcp-native": "native", "jetmcp-granian": "granian"}
    if server in engines:
        return [
            *(str(BIN / "jetmcp"), "run", str(LOAD / "jetmcp_server.py") + ":app"),
            *("--transport", "http", "--host", "127.0.0.1", "--port", str(port)),
            *("--workers", "1", "--stateless", "--server", engines[server]),
        ]
    if server == "uvloop-floor":
        return [
            *(sys.executable, str(LOAD / "uvloop_floor.py")),
            *("--host", "127.0.0.1", "--port", str(port)),
        ]
    native = {"native-fixed": "fixed", "native-python": "python-fixed", "native-mcp": "mcp"}
    if server in native:
        return [
            *(sys.executable, str(LOAD / "native_proto.py"), "--mode", native[server]),
            *("--host", "127.0.0.1", "--port", str(port)),
        ]
    app = {"ceiling": "ceiling:rsgi_app", "floor": "floor:rsgi_app"}[server]
    return [
        *(str(BIN / "granian"), "--interface", "rsgi", "--http", "1", "--no-ws"),
        *("--loop", "uvloop", "--workers", "1", "--log-level", "warning"),
        *("--host", "127.0.0.1", "--port", str(port), "--working-dir", str(LOAD), app),
    ]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def connect(port: int, timeout: float) -> http.client.HTTPConnection:
    deadline = time.monotonic() + timeout
    while True:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        try:
            conn.connect()
            return conn
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGINT the server's process group (a graceful stop: callgrind writes its counts when
    each process exits), then SIGTERM and SIGKILL if any of it lingers."""
    for sig, wait in ((signal.SIGINT, 60.0), (signal.SIGTERM, 20.0), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if proc.poll() is not None and not _group_alive(proc.pid):
                return
            time.sleep(0.2)


def totals(directory: Path) -> list[tuple[str, int]]:
    """The command and instruction total of each process's callgrind file in
    ``directory``, in the order the processes started."""
    found = []
    for out in sorted(directory.glob("callgrind.*"), key=lambda p: int(p.suffix[1:])):
        cmd = "?"
        for line in out.read_text(errors="replace").splitlines():
            if line.startswith("cmd:"):
                cmd = line[4:].strip()
            elif line.startswith("summary:"):
                found.append((cmd, int(line.split()[1])))
                break
        else:
            raise RuntimeError(f"{out} is incomplete")
    if not found:
        raise RuntimeError(f"no callgrind output in {directory}")
    return found


def run(server: str, workload: str, requests: int, work: Path) -> list[tuple[str, int]]:
    """The instructions of each server process, for ``requests`` requests."""
    w = REQUEST_SHAPES[workload]
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        **w.headers,
    }
    out = work / f"{server}-{requests}"
    out.mkdir()
    port = free_port()
    valgrind = [
        "valgrind",
        "--tool=callgrind",
        "--trace-children=yes",
        f"--callgrind-out-file={out}/callgrind.%p",
    ]
    log = (out / "server.log").open("wb")
    proc = subprocess.Popen(
        [*valgrind, *command(server, port)],
        cwd=ROOT,
        # The same hashes in both runs: start-up (the app loader's check, imports) then
        # costs the same instructions and cancels out.
        env={**os.environ, "PYTHONHASHSEED": "0"},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        conn = connect(port, timeout=600)
        for _ in range(requests):
            conn.request("POST", "/mcp", body=w.body, headers=headers)
            reply = conn.getresponse()
            body = reply.read()
            if reply.status != 200 or body != w.reply:
                raise RuntimeError(f"{server} answered {reply.status}: {body[:200]!r}")
        conn.close()
    finally:
        stop(proc)
        log.close()
    return totals(out)


def main() -> int:
    parser = argparse.ArgumentParser(description="instructions per request of a live server")
    parser.add_argument(
        "--server",
        choices=(
            "jetmcp",
            "jetmcp-native",
            "jetmcp-granian",
            "uvloop-floor",
            "floor",
            "ceiling",
            "native-fixed",
            "native-python",
            "native-mcp",
        ),
        required=True,
    )
    # Stateless servers only: the session workload needs an initialize first.
    stateless = sorted(key for key, w in REQUEST_SHAPES.items() if not w.session)
    parser.add_argument("--workload", choices=stateless, required=True)
    parser.add_argument("--requests", type=int, default=300, help="requests of the first run")
    parser.add_argument(
        "--keep",
        type=Path,
        help="a new directory to keep both runs' callgrind files in (for callgrind_annotate, "
        "or bench/load/callgrind_diff.py to see where the 1,000 requests' instructions went)",
    )
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        if args.keep is not None:
            args.keep.mkdir(parents=True)
            work = args.keep
        else:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="callgrind-live-")))
        first = run(args.server, args.workload, args.requests, work)
        second = run(args.server, args.workload, args.requests + STEP, work)
    if len(first) != len(second):
        raise SystemExit(
            f"the runs left {len(first)} and {len(second)} process counts: a process did not "
            "exit cleanly (its counts are lost); run again"
        )
    # Start-up and shutdown cost the same in both runs, in every process (the app loader's
    # check, Granian's supervisor): the difference is the worker's 1,000 requests.
    per = (sum(n for _, n in second) - sum(n for _, n in first)) / STEP
    for (cmd, before), (_, after) in zip(first, second, strict=True):
        print(f"  {(after - before) / STEP:>12,.0f}  {cmd[:100]}", file=sys.stderr)
    print(f"{args.server} {args.workload}: {per:,.0f} instructions per request")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
