"""SIGTERM on ``jetmcp run --transport stdio`` drains like HTTP (issue 40 item 8): no more
input is read, requests in flight finish within ``--shutdown-grace-seconds`` and are
answered, then the process exits 0; past the grace they are answered with an error, the
loss is logged and the exit status is 1. Real processes, real signals."""

from __future__ import annotations

import signal
import time
from typing import Any

import pytest

from harness.servers import StdioServer

APP = "tests.apps.caps_app:app"


def sleep_call(ms: int, id: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {"name": "sleep", "arguments": {"ms": ms}},
    }


def started(*extra: str) -> StdioServer:
    """A stdio server that answered a ping (so it is serving, its SIGTERM handler set)."""
    io = StdioServer(*extra, app=APP)
    assert io.call({"jsonrpc": "2.0", "id": "up", "method": "ping"})["result"] == {}
    return io


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_answers_every_call_in_flight_within_the_grace(
    signum: signal.Signals,
) -> None:
    """SIGINT drains like SIGTERM, as on HTTP (before, SIGINT ended the process at once with
    a KeyboardInterrupt and no answer)."""
    io = started("--shutdown-grace-seconds", "20", "--log-level", "info")
    try:
        for i in range(10):
            io.send(sleep_call(1000, f"c{i}"))
        time.sleep(0.3)
        io.proc.send_signal(signum)
        replies = [io.read() for _ in range(10)]
        assert sorted(r["id"] for r in replies) == sorted(f"c{i}" for i in range(10))
        for reply in replies:
            assert reply["result"]["content"][0]["text"] == "slept 1000 ms", reply
        assert io.wait() == 0, io.stderr()
        assert f"{signum.name}: 10 requests in flight" in io.stderr(), io.stderr()
    finally:
        io.stop()


def test_input_after_sigterm_is_not_read() -> None:
    io = started("--shutdown-grace-seconds", "20")
    try:
        io.send(sleep_call(1000, "first"))
        time.sleep(0.3)
        io.proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        io.send(sleep_call(0, "late"))
        assert io.read()["id"] == "first"
        assert io.wait() == 0, io.stderr()
        assert b'"late"' not in b"".join(io.transcript)
    finally:
        io.stop()


def test_past_the_grace_the_loss_is_answered_logged_and_exit_is_nonzero() -> None:
    io = started("--shutdown-grace-seconds", "0.5")
    try:
        io.send(sleep_call(60_000, "stuck"))
        time.sleep(0.3)
        io.proc.send_signal(signal.SIGTERM)
        reply = io.read()
        assert reply["id"] == "stuck" and reply["error"]["code"] == -32000, reply
        assert io.wait() == 1
        assert "shutdown grace (0.5 s) over: 1 requests" in io.stderr(), io.stderr()
    finally:
        io.stop()
