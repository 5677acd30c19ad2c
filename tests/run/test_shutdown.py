"""A server that stops ends its open 2026-07-28 ``subscriptions/listen`` requests with their
final result, ``{"resultType": "complete", "_meta": {subscriptionId}}``, over HTTP (SIGTERM)
and over stdio (stdin closed)."""

from __future__ import annotations

import json
import signal
from typing import Any

import httpx

from harness.messages import encode, modern_headers, modern_request, modern_routing
from harness.servers import MODERN_APP, HttpServer, StdioServer

SUB = "io.modelcontextprotocol/subscriptionId"


def listen(request_id: str) -> dict[str, Any]:
    return modern_request(
        "subscriptions/listen", {"notifications": {"toolsListChanged": True}}, id=request_id
    )


def test_http_shutdown_sends_the_final_result() -> None:
    server = HttpServer(app=MODERN_APP)
    try:
        body = listen("listen-http")
        headers = modern_headers() | modern_routing(body)
        with (
            httpx.Client(timeout=10.0) as client,
            client.stream("POST", server.url, content=encode(body), headers=headers) as resp,
        ):
            assert resp.status_code == 200
            messages = (
                json.loads(line[5:]) for line in resp.iter_lines() if line.startswith("data:")
            )
            ack = next(messages)
            assert ack["method"] == "notifications/subscriptions/acknowledged"
            server.proc.send_signal(signal.SIGTERM)
            final = next(messages)
        assert final["id"] == "listen-http"
        assert final["result"]["resultType"] == "complete"
        assert final["result"]["_meta"][SUB] == "listen-http"
        assert server.proc.wait(timeout=10) == 0
    finally:
        server.stop()


def test_stdio_eof_sends_the_final_result_and_exits() -> None:
    io = StdioServer(app=MODERN_APP)
    try:
        io.send(listen("listen-stdio"))
        assert io.read()["method"] == "notifications/subscriptions/acknowledged"
        io.close_stdin()
        final = io.read()
        assert final["id"] == "listen-stdio"
        assert final["result"]["resultType"] == "complete"
        assert final["result"]["_meta"][SUB] == "listen-stdio"
        assert io.wait() == 0
    finally:
        io.stop()
