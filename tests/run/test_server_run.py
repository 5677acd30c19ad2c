"""``Server.run(transport="http")`` (issue 39): it serves on jetmcp's native HTTP engine
unless told otherwise, on Granian with ``server="granian"`` or ``JETMCP_SERVER=granian``,
and SIGTERM lets a call in flight finish before the process exits with status 0."""

from __future__ import annotations

import signal
import sys
import threading
import time

import httpx
import pytest

from harness.messages import encode, json_headers, request
from harness.servers import ROOT, ServerProcess, free_port, server_env


def serve_itself(*argv: str, env: dict[str, str] | None = None) -> ServerProcess:
    port = free_port()
    return ServerProcess(
        [sys.executable, "-m", "tests.apps.run_itself", str(port), *argv],
        port,
        ready="ping",
        label="Server.run(transport='http')",
        env={**server_env(), **(env or {})},
        cwd=ROOT,
    )


def add(server: ServerProcess) -> httpx.Response:
    body = encode(request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}, 1))
    reply = httpx.post(server.url, content=body, headers=json_headers(), timeout=10.0)
    assert reply.status_code == 200, reply.text
    assert reply.json()["result"]["content"][0]["text"] == "5"
    return reply


@pytest.mark.parametrize(
    ("argv", "env", "engine"),
    [
        ((), {}, "native"),
        (("granian",), {}, "granian"),
        ((), {"JETMCP_SERVER": "granian"}, "granian"),
        (("native",), {"JETMCP_SERVER": "granian"}, "native"),
    ],
    ids=["default", "server=granian", "JETMCP_SERVER=granian", "keyword-beats-env"],
)
def test_run_serves_on_the_engine_asked_for(
    argv: tuple[str, ...], env: dict[str, str], engine: str
) -> None:
    server = serve_itself(*argv, env=env)
    try:
        reply = add(server)
        # Granian names itself in every reply; the native engine adds no Server header.
        assert reply.headers.get("server") == ("granian" if engine == "granian" else None)
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(timeout=30.0) == 0, server.stderr()
    finally:
        server.stop()


def test_sigterm_lets_a_call_in_flight_finish_on_the_native_engine() -> None:
    server = serve_itself()
    try:
        replies: list[httpx.Response] = []
        body = encode(request("tools/call", {"name": "sleep", "arguments": {"seconds": 1.0}}, 1))
        caller = threading.Thread(
            target=lambda: replies.append(
                httpx.post(server.url, content=body, headers=json_headers(), timeout=30.0)
            )
        )
        caller.start()
        time.sleep(0.3)  # the call reaches the server (a settling wait, not a bound)
        server.proc.send_signal(signal.SIGTERM)
        caller.join(30.0)
        (reply,) = replies
        assert reply.status_code == 200, reply.text
        assert reply.json()["result"]["content"][0]["text"] == "slept 1.0"
        assert server.proc.wait(timeout=30.0) == 0, server.stderr()
    finally:
        server.stop()


def test_an_unknown_engine_is_refused() -> None:
    from apps.run_itself import app

    with pytest.raises(ValueError, match="unknown HTTP server 'nginx'"):
        app.run(transport="http", port=free_port(), server="nginx")
