"""Adapted fastmcp servers run synchronous tools as fastmcp does (issue 40, item 3).

fastmcp leaves no tool to jetmcp's lifting: every call goes through fastmcp's own code, so a
synchronous tool runs where fastmcp runs it. fastmcp 4.x (on mcp 2.x) calls it in anyio's
thread pool (``FunctionTool.run``: ``call_sync_fn_in_threadpool``): while a 2 s ``sleep`` runs,
concurrent ``add`` calls are answered before it. fastmcp 2.14 (on mcp 1.x) calls it on the
event loop (``Tool.run``: the function called by its type adapter), so under jetmcp, as under
fastmcp itself, the adds wait for it. Orderings, not timing bounds. Served over stdio by
``jetmcp run`` in each drop-in environment (``scripts/dropin.sh``).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
#: The drop-in environments (tests/dropin/test_dropin.py's): mcp 2.x here, 1.x in the cache.
PYTHON = {"v2": Path(sys.executable), "v1": ROOT / ".cache" / "dropin" / "v1" / "bin" / "python"}
SERVERS = Path(__file__).resolve().parent / "servers"
READ = 60.0
ADDS = 5


def _has_fastmcp(python: Path) -> bool:
    if not python.exists():
        return False
    found = subprocess.run(
        [str(python), "-c", "import fastmcp"], capture_output=True, check=False, timeout=60
    )
    return found.returncode == 0


class Served:
    """``jetmcp run sync_fastmcp.py --transport stdio`` in one environment."""

    def __init__(self, python: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT / "python"), "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [str(python), "-m", "jetmcp", "run", "sync_fastmcp.py", "--transport", "stdio"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=SERVERS,
            env=env,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.err: list[bytes] = []
        assert self.proc.stdout is not None and self.proc.stderr is not None
        threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines.put)).start()
        threading.Thread(target=self._pump, args=(self.proc.stderr, self.err.append)).start()

    @staticmethod
    def _pump(stream: Any, put: Any) -> None:
        for line in iter(stream.readline, b""):
            put(line)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def read(self) -> dict[str, Any]:
        try:
            reply: dict[str, Any] = json.loads(self.lines.get(timeout=READ))
        except queue.Empty:
            raise AssertionError(f"no reply; stderr:\n{self.stderr()}") from None
        return reply

    def stderr(self) -> str:
        return b"".join(self.err).decode("utf-8", "replace")

    def wait_for(self, text: str) -> None:
        deadline = time.monotonic() + READ
        while text not in self.stderr():
            assert time.monotonic() < deadline, f"{text!r} never logged:\n{self.stderr()}"
            time.sleep(0.02)

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(READ)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(READ)


def call(name: str, arguments: dict[str, Any], id: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}


@pytest.mark.parametrize(("env", "threaded"), [("v2", True), ("v1", False)])
def test_fastmcp_sync_tools_run_where_fastmcp_runs_them(env: str, threaded: bool) -> None:
    python = PYTHON[env]
    if not _has_fastmcp(python):
        pytest.skip(f"no fastmcp in the {env} environment: run bash scripts/dropin.sh")
    served = Served(python)
    try:
        served.send(
            {
                "jsonrpc": "2.0",
                "id": "init",
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
        )
        assert served.read()["id"] == "init"
        served.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        served.send(call("sleep", {"seconds": 2}, "slow"))
        served.wait_for("sleep 2")
        for i in range(ADDS):
            served.send(call("add", {"a": i, "b": 1}, i))
        order = [served.read() for _ in range(ADDS + 1)]
        ids = [m["id"] for m in order]
        for msg in order:
            assert "result" in msg and not msg["result"].get("isError"), msg
        if threaded:
            # fastmcp 4.x: the adds do not wait for the sleeping thread.
            assert ids[-1] == "slow", ids
        else:
            # fastmcp 2.14: the sleep holds the loop, so the adds come after it.
            assert ids[0] == "slow", ids
        assert sorted(i for i in ids if i != "slow") == list(range(ADDS)), ids
    finally:
        served.stop()
