"""JSON-RPC batches at 2026-07-28 (seed 002): jetmcp's ``io.jetmcp/batch`` extension, row by
row of the batching table in docs/protocol.md, over HTTP and stdio, switched on (the default)
and off (``--no-modern-batch``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from harness.http import assert_refused_batch, raw_http_post
from harness.messages import (
    META_SERVER_INFO,
    MODERN,
    assert_error,
    assert_result,
    encode,
    modern_headers,
    modern_meta,
    modern_request,
    modern_routing,
    notification,
    request,
    tool_text,
    unique_id,
)
from harness.servers import MODERN_APP, HttpServer, StdioServer

MAX_BATCH = 10


def call_tool(name: str, arguments: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    return modern_request("tools/call", params, **kw)


class Channel:
    """Sends a body the 2026-07-28 way and gives back (HTTP status, reply); stdio has no
    status (None) and a reply of None means nothing was written."""

    transport: str

    def send(self, body: Any, headers: dict[str, str] | None = None) -> tuple[int | None, Any]:
        raise NotImplementedError

    def send_unanswered(self, body: Any) -> None:
        """Send ``body`` and check that nothing answers it (HTTP 202, stdio silence)."""
        raise NotImplementedError


class Http(Channel):
    transport = "http"

    def __init__(self, client: httpx.Client, url: str) -> None:
        self.client = client
        self.url = url

    def send(self, body: Any, headers: dict[str, str] | None = None) -> tuple[int | None, Any]:
        # A batch names no single request: no Mcp-Method / Mcp-Name of its own.
        h = modern_headers() | modern_routing(body) | (headers or {})
        resp = self.client.post(self.url, content=encode(body), headers=h)
        return resp.status_code, resp.json()

    def send_unanswered(self, body: Any) -> None:
        h = modern_headers() | modern_routing(body)
        resp = self.client.post(self.url, content=encode(body), headers=h)
        assert resp.status_code == 202 and resp.content == b"", resp


class Stdio(Channel):
    transport = "stdio"

    def __init__(self, server: StdioServer) -> None:
        self.server = server

    def send(self, body: Any, headers: dict[str, str] | None = None) -> tuple[int | None, Any]:
        assert not headers, "stdio has no headers"
        return None, self.server.call(body)

    def send_unanswered(self, body: Any) -> None:
        self.server.send(body)
        self.server.assert_silent()


@pytest.fixture(scope="module")
def http_on() -> Iterator[str]:
    server = HttpServer("--max-batch", str(MAX_BATCH), app=MODERN_APP)
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="module")
def http_off() -> Iterator[str]:
    server = HttpServer("--no-modern-batch", app=MODERN_APP)
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(params=["http", "stdio"])
def on(request: pytest.FixtureRequest, client: httpx.Client) -> Iterator[Channel]:
    if request.param == "http":
        yield Http(client, request.getfixturevalue("http_on"))
        return
    server = StdioServer("--max-batch", str(MAX_BATCH), app=MODERN_APP)
    try:
        yield Stdio(server)
    finally:
        server.stop()


@pytest.fixture(params=["http", "stdio"])
def off(request: pytest.FixtureRequest, client: httpx.Client) -> Iterator[Channel]:
    if request.param == "http":
        yield Http(client, request.getfixturevalue("http_off"))
        return
    server = StdioServer("--no-modern-batch", app=MODERN_APP)
    try:
        yield Stdio(server)
    finally:
        server.stop()


def ok(status: int | None) -> None:
    assert status in (None, 200), status


# --------------------------------------------------------------------------- switched on


def test_discover_advertises_the_extension(on: Channel) -> None:
    status, reply = on.send(modern_request("server/discover", id="d"))
    ok(status)
    caps = assert_result(reply, "d")["capabilities"]
    assert caps["extensions"]["io.jetmcp/batch"] == {"maxBatch": MAX_BATCH}


def test_array_of_responses_in_request_order(on: Channel) -> None:
    body = [
        call_tool("slow", {"tag": unique_id("b"), "ms": 200}, id="first"),
        modern_request("tools/list", id=2),
        call_tool("deploy", {"region": "us"}, id="third"),
        modern_request("prompts/get", {"name": "hello", "arguments": {"name": "Ada"}}, id=4),
    ]
    status, reply = on.send(body)
    ok(status)
    assert [m["id"] for m in reply] == ["first", 2, "third", 4]
    for msg in reply:
        result = assert_result(msg, msg["id"])
        assert result["resultType"] == "complete"
        assert META_SERVER_INFO in result["_meta"]
    assert tool_text(reply[0]["result"]).startswith("slept ")


def test_each_entry_is_checked_on_its_own(on: Channel) -> None:
    no_caps = modern_meta()
    del no_caps["io.modelcontextprotocol/clientCapabilities"]
    body = [
        modern_request("tools/list", id=1),
        request("tools/list", {}, id=2),  # no _meta
        modern_request("tools/list", id=3, meta=no_caps),
        modern_request("tools/list", id=4, meta=modern_meta("v999.0.0")),
        call_tool("needs_sampling", id=5),
        call_tool("needs_sampling", id=6, meta=modern_meta(capabilities={"sampling": {}})),
        modern_request("ping", id=7),
        modern_request("initialize", {"protocolVersion": MODERN, "capabilities": {}}, id=8),
        modern_request("subscriptions/listen", {"notifications": {}}, id=9),
    ]
    status, reply = on.send(body)
    ok(status)  # the batch reply is 200 whatever its entries say
    by_id = {m["id"]: m for m in reply}
    assert [m["id"] for m in reply] == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    assert_result(by_id[1], 1)
    assert_error(by_id[2], -32602, 2)
    assert_error(by_id[3], -32602, 3)
    if on.transport == "http":
        # The header says 2026-07-28, the entry another version: a header mismatch.
        assert_error(by_id[4], -32020, 4)
    else:
        assert_error(by_id[4], -32022, 4)
    assert_error(by_id[5], -32021, 5)
    assert tool_text(assert_result(by_id[6], 6)) == "sampling declared"
    assert_error(by_id[7], -32601, 7)
    assert_error(by_id[8], -32601, 8)
    assert_error(by_id[9], -32600, 9)


def test_unsupported_version_header_refuses_the_batch(client: httpx.Client, http_on: str) -> None:
    # The header names a version nobody serves: the HTTP request is refused whole (400,
    # -32022), as the spec has it for that header, before any entry is looked at.
    body = [
        modern_request("tools/list", id=1, meta=modern_meta("v999.0.0")),
        modern_request("tools/list", id=2, meta=modern_meta("v999.0.0")),
    ]
    resp = client.post(http_on, content=encode(body), headers=modern_headers(version="v999.0.0"))
    assert resp.status_code == 400
    assert_error(resp.json(), -32022, None)
    assert resp.json()["error"]["data"]["requested"] == "v999.0.0"


def test_unsupported_version_entry(on: Channel) -> None:
    # An entry naming a version nobody serves is refused alone: -32022 on stdio (no
    # header); over HTTP it contradicts the batch's 2026-07-28 header first (-32020).
    body = [
        modern_request("tools/list", id=1, meta=modern_meta("v999.0.0")),
        modern_request("tools/list", id=2),
    ]
    status, reply = on.send(body)
    ok(status)
    assert_error(reply[0], -32022 if on.transport == "stdio" else -32020, 1)
    assert_result(reply[1], 2)


def test_entry_needing_input_answers_its_slot(on: Channel) -> None:
    body = [
        modern_request("prompts/get", {"name": "ask"}, id="ask"),
        modern_request("prompts/get", {"name": "hello", "arguments": {"name": "Ada"}}, id="hi"),
    ]
    status, reply = on.send(body)
    ok(status)
    asked = assert_result(reply[0], "ask")
    assert asked["resultType"] == "input_required"
    assert "who" in asked["inputRequests"]
    assert assert_result(reply[1], "hi")["resultType"] == "complete"


def test_notifications_and_responses_have_no_entry(on: Channel) -> None:
    body = [
        notification("notifications/progress", {"progressToken": 1, "progress": 1}),
        modern_request("tools/list", id="only"),
        {"jsonrpc": "2.0", "id": "client-answer", "result": {}},
    ]
    status, reply = on.send(body)
    ok(status)
    assert [m["id"] for m in reply] == ["only"]


def test_a_batch_with_no_request_gets_no_reply(on: Channel) -> None:
    body = [
        notification("notifications/progress", {"progressToken": 1, "progress": 1}),
        notification("notifications/cancelled", {"requestId": "nobody"}),
    ]
    if on.transport == "stdio":
        # stdio tells a modern line by its requests' _meta: a request-less line is legacy,
        # where (no session: 2025-03-26) it is accepted and answered with nothing too.
        body.append({"jsonrpc": "2.0", "id": "x", "result": {}})
    on.send_unanswered(body)


def test_empty_array(on: Channel) -> None:
    # (On stdio an empty array carries no _meta, so it is a legacy line: the same answer.)
    status, reply = on.send([])
    ok(status)
    assert_error(reply, -32600, None)


def test_invalid_entries(on: Channel) -> None:
    body = [1, {}, modern_request("tools/list", id=1), {"jsonrpc": "2.0", "id": 1.5, "method": "x"}]
    status, reply = on.send(body)
    ok(status)
    assert len(reply) == 4
    assert_error(reply[0], -32600, None)
    assert_error(reply[1], -32600, None)
    assert_result(reply[2], 1)
    assert_error(reply[3], -32600, None)


def test_too_many_entries(on: Channel) -> None:
    body = [modern_request("tools/list", id=i) for i in range(MAX_BATCH + 1)]
    status, reply = on.send(body)
    if on.transport == "http":
        assert status == 413
    assert_error(reply, -32600, None)
    status, reply = on.send(body[:MAX_BATCH])
    assert len(reply) == MAX_BATCH


@pytest.mark.parametrize(
    "headers",
    [
        {"Mcp-Method": "tools/list"},
        {"Mcp-Name": "deploy"},
        {"Mcp-Param-Region": "us"},
        {"mcp-method": "tools/list", "mcp-name": "x"},
    ],
)
def test_routing_headers_refuse_the_batch(
    client: httpx.Client, http_on: str, headers: dict[str, str]
) -> None:
    body = [modern_request("tools/list", id=1), call_tool("deploy", {"region": "us"}, id=2)]
    resp = client.post(http_on, content=encode(body), headers=modern_headers() | headers)
    assert resp.status_code == 400
    assert_error(resp.json(), -32020, None)


def test_stdio_modern_batch_beside_a_session_without_batches() -> None:
    server = StdioServer(app=MODERN_APP)
    try:
        server.initialize("2025-06-18")
        # The session refuses legacy batches...
        refused = server.call([request("ping", id=1)])
        assert_error(refused, -32600, None)
        # ...but a line whose requests carry modern _meta is a 2026-07-28 batch.
        reply = server.call([modern_request("tools/list", id=2), request("tools/list", id=3)])
        assert_result(reply[0], 2)
        assert_error(reply[1], -32602, 3)
    finally:
        server.stop()


def test_disconnect_cancels_the_whole_batch(client: httpx.Client, http_on: str) -> None:
    tags = [unique_id("bg"), unique_id("bg")]
    body = [call_tool("slow", {"tag": tag}, id=tag) for tag in tags]
    with raw_http_post(http_on, body, modern_headers()):
        time.sleep(0.3)  # both handlers are running; then the client leaves
    channel = Http(client, http_on)
    deadline = time.monotonic() + 5.0
    while True:
        _, reply = channel.send(call_tool("cancelled", id="c"))
        text = tool_text(assert_result(reply, "c"))
        if set(tags) <= set(text.split(",")):
            return
        assert time.monotonic() < deadline, text
        time.sleep(0.05)


# --------------------------------------------------------------------------- switched off


def test_off_refuses_like_2025_06_18(off: Channel) -> None:
    status, reply = off.send([modern_request("tools/list", id=1)])
    if off.transport == "http":
        assert status == 200
    assert_error(reply, -32600, None)


def test_off_is_not_advertised(off: Channel) -> None:
    status, reply = off.send(modern_request("server/discover", id="d"))
    ok(status)
    caps = assert_result(reply, "d")["capabilities"]
    assert "io.jetmcp/batch" not in caps.get("extensions", {})


def test_off_single_requests_still_served(off: Channel) -> None:
    status, reply = off.send(call_tool("deploy", {"note": "n"}, id=1))
    ok(status)
    assert assert_result(reply, 1)["resultType"] == "complete"


def test_off_keeps_legacy_batches(client: httpx.Client, http_off: str) -> None:
    resp = client.post(
        http_off,
        content=encode([request("ping", id=1)]),
        headers=modern_headers(version="2025-03-26"),
    )
    assert resp.json() == [{"jsonrpc": "2.0", "id": 1, "result": {}}]
    resp = client.post(
        http_off,
        content=encode([request("ping", id=1)]),
        headers=modern_headers(version="2025-06-18"),
    )
    assert_refused_batch(resp)
