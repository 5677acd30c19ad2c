"""Revision 2026-07-28 over stdio, against a real ``jetmcp run --transport stdio`` process.

A line whose requests carry ``params._meta["io.modelcontextprotocol/protocolVersion"]`` is
served statelessly, whatever ``initialize`` negotiated; the other lines stay legacy. There
are no headers on stdio: the checks start at ``_meta``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from harness.messages import (
    META_SERVER_INFO,
    MODERN,
    assert_error,
    assert_result,
    encode,
    modern_meta,
    modern_request,
    notification,
    request,
    tool_text,
    unique_id,
)
from harness.servers import MODERN_APP, StdioServer


@pytest.fixture
def io() -> Iterator[StdioServer]:
    server = StdioServer(app=MODERN_APP)
    try:
        yield server
    finally:
        server.stop()


def call_tool(name: str, arguments: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    return modern_request("tools/call", params, **kw)


def until(io: StdioServer, request_id: Any) -> list[Any]:
    """Every line up to and including the response to ``request_id``."""
    lines = []
    while True:
        msg = io.read()
        lines.append(msg)
        if isinstance(msg, dict) and msg.get("id") == request_id and "method" not in msg:
            return lines


def test_modern_without_a_session(io: StdioServer) -> None:
    result = assert_result(io.call(modern_request("server/discover", id="d")), "d")
    assert MODERN in result["supportedVersions"]
    assert result["capabilities"]["extensions"]["io.jetmcp/batch"] == {"maxBatch": 256}
    assert result["resultType"] == "complete"
    assert result["_meta"][META_SERVER_INFO]["name"] == "jetmcp-modern-tests"
    reply = io.call(call_tool("deploy", {"region": "us"}, id=1))
    result = assert_result(reply, 1)
    assert tool_text(result) == '{"region": "us"}'  # no headers to mirror on stdio
    assert result["resultType"] == "complete"


@pytest.mark.parametrize("version", ["2024-11-05", "2025-06-18", "2025-11-25"])
def test_modern_lines_beside_a_legacy_session(io: StdioServer, version: str) -> None:
    io.initialize(version)
    legacy = assert_result(io.call(request("tools/call", {"name": "cancelled"}, id=1)), 1)
    assert "resultType" not in legacy and "_meta" not in legacy
    modern = assert_result(io.call(call_tool("cancelled", id=2)), 2)
    assert modern["resultType"] == "complete"
    assert META_SERVER_INFO in modern["_meta"]
    # The session is untouched: legacy methods still work, and are unknown on modern lines.
    assert io.call(request("ping", id=3)) == {"jsonrpc": "2.0", "id": 3, "result": {}}
    assert_error(io.call(modern_request("ping", id=4)), -32601, 4)


def test_legacy_lines_without_meta_stay_legacy(io: StdioServer) -> None:
    # A _meta without the protocol version is not a modern request.
    reply = io.call(request("ping", {"_meta": {"progressToken": 1}}, id=5))
    assert reply == {"jsonrpc": "2.0", "id": 5, "result": {}}


@pytest.mark.parametrize(
    ("meta", "code"),
    [
        ({"io.modelcontextprotocol/protocolVersion": MODERN}, -32602),
        ({"io.modelcontextprotocol/protocolVersion": 7, "x": 1}, -32602),
        (
            {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": "all",
            },
            -32602,
        ),
        (modern_meta("v999.0.0"), -32022),
        (modern_meta("2025-11-25"), -32022),
    ],
)
def test_meta_and_version_checks(io: StdioServer, meta: dict[str, Any], code: int) -> None:
    reply = io.call(modern_request("tools/list", id="m", meta=meta))
    assert_error(reply, code, "m")
    if code == -32022:
        assert (
            reply["error"]["data"]["requested"] == meta["io.modelcontextprotocol/protocolVersion"]
        )
        assert MODERN in reply["error"]["data"]["supported"]


def test_client_info_is_optional(io: StdioServer) -> None:
    meta = modern_meta()
    del meta["io.modelcontextprotocol/clientInfo"]
    assert_result(io.call(modern_request("tools/list", id=6, meta=meta)), 6)


@pytest.mark.parametrize(
    "method", ["initialize", "ping", "logging/setLevel", "resources/subscribe", "nope/nope"]
)
def test_unknown_and_legacy_only_methods(io: StdioServer, method: str) -> None:
    reply = io.call(modern_request(method, {"protocolVersion": MODERN}, id=7))
    assert_error(reply, -32601, 7)


def test_initialize_with_modern_meta_opens_no_session(io: StdioServer) -> None:
    body = modern_request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
    assert_error(io.call(body), -32601, body["id"])
    # Still no session: batches follow the 2025-03-26 default, which accepts them.
    reply = io.call([request("ping", id=8)])
    assert reply == [{"jsonrpc": "2.0", "id": 8, "result": {}}]


def test_per_request_capabilities(io: StdioServer) -> None:
    reply = io.call(call_tool("needs_sampling", id=9))
    assert_error(reply, -32021, 9)
    assert reply["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}
    meta = modern_meta(capabilities={"sampling": {}})
    assert tool_text(assert_result(io.call(call_tool("needs_sampling", id=10, meta=meta)), 10))
    assert_error(io.call(call_tool("needs_sampling", id=11)), -32021, 11)


def test_notifications_go_to_stdout_before_the_result(io: StdioServer) -> None:
    meta = modern_meta(progressToken="t", **{"io.modelcontextprotocol/logLevel": "debug"})
    io.send(call_tool("chatty", id=12, meta=meta))
    lines = until(io, 12)
    assert [m.get("method") for m in lines[:-1]] == [
        "notifications/progress",
        "notifications/message",
        "notifications/progress",
    ]
    assert assert_result(lines[-1], 12)["resultType"] == "complete"


def test_no_log_without_a_log_level(io: StdioServer) -> None:
    io.send(call_tool("chatty", id=13))
    lines = until(io, 13)
    assert len(lines) == 1, lines


def test_no_server_requests(io: StdioServer) -> None:
    io.send(call_tool("asks_client", id=14))
    lines = until(io, 14)
    assert len(lines) == 1, lines
    assert tool_text(assert_result(lines[0], 14)) == "refused -32603"


def test_cancelled_notification_cancels_a_modern_request(io: StdioServer) -> None:
    tag = unique_id("c")
    io.send(call_tool("slow", {"tag": tag}, id="slow-1", meta=modern_meta(progressToken=1)))
    assert io.read()["method"] == "notifications/progress"  # it runs
    io.send(notification("notifications/cancelled", {"requestId": "slow-1"}))
    io.assert_silent()  # nothing is ever sent for a cancelled request
    assert tool_text(assert_result(io.call(call_tool("cancelled", id=15)), 15)) == tag


def test_cancel_before_the_request_starts(io: StdioServer) -> None:
    tag = unique_id("c")
    # Both in one write: the cancel finds the request before its handler ever runs.
    line = encode(call_tool("slow", {"tag": tag}, id="slow-0")) + b"\n"
    line += encode(notification("notifications/cancelled", {"requestId": "slow-0"})) + b"\n"
    io.send_raw(line)
    io.assert_silent()


def test_cancel_in_the_same_line_batch(io: StdioServer) -> None:
    tag = unique_id("c")
    io.send(call_tool("slow", {"tag": tag}, id="slow-2", meta=modern_meta(progressToken=2)))
    assert io.read()["method"] == "notifications/progress"
    io.send(
        [
            notification("notifications/cancelled", {"requestId": "slow-2"}),
            call_tool("cancelled", id=16),
        ]
    )
    reply = io.read()
    assert [m["id"] for m in reply] == [16]
    io.assert_silent()
    listed = tool_text(assert_result(io.call(call_tool("cancelled", id=17)), 17))
    assert tag in listed.split(",")


def test_parse_and_shape_errors(io: StdioServer) -> None:
    assert_error(io.call(b'{"jsonrpc":"2.0","id":1,"params":{"_meta":'), -32700, None)
    bad = {"jsonrpc": "2.0", "id": 18, "params": {"_meta": modern_meta()}}
    assert_error(io.call(bad), -32600, 18)
    params_list = {"jsonrpc": "2.0", "id": 19, "method": "tools/list", "params": [modern_meta()]}
    assert io.call(params_list)["id"] == 19


def test_listen_ends_with_notifications_cancelled(io: StdioServer) -> None:
    body = modern_request(
        "subscriptions/listen", {"notifications": {"toolsListChanged": True}}, id="listen-1"
    )
    io.send(body)
    ack = io.read()
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert tool_text(assert_result(io.call(call_tool("listeners", id=20)), 20)) == "1"
    io.send(call_tool("change_tools", id=21))
    lines = until(io, 21)
    while not any(m.get("method") == "notifications/tools/list_changed" for m in lines):
        lines.append(io.read())  # the notification may follow the tool's own reply
    changed = [m for m in lines if m.get("method") == "notifications/tools/list_changed"]
    assert changed[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen-1"
    io.send(notification("notifications/cancelled", {"requestId": "listen-1"}))
    io.assert_silent()  # no final result for a request the client cancelled
    assert tool_text(assert_result(io.call(call_tool("listeners", id=22)), 22)) == "0"
