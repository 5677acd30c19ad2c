"""Revision 2026-07-28 over Streamable HTTP, against a real ``jetmcp run`` process.

A POST whose ``MCP-Protocol-Version`` names no legacy revision is served statelessly: its
routing headers are checked against the body, then its ``_meta``, its version and its method,
in that order; every result gets ``resultType`` and the server's identity. The legacy
revisions keep being served on the same endpoint.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from harness.http import post, raw_http_post
from harness.messages import (
    META_SERVER_INFO,
    MODERN,
    REVISIONS,
    assert_error,
    assert_result,
    encode,
    initialize_request,
    modern_headers,
    modern_meta,
    modern_request,
    modern_routing,
    notification,
    request,
    tool_text,
    unique_id,
)
from harness.servers import MODERN_APP, HttpServer


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    server = HttpServer(app=MODERN_APP)
    try:
        yield server.url
    finally:
        server.stop()


def send(
    client: httpx.Client,
    url: str,
    body: Any,
    *,
    headers: dict[str, str] | None = None,
    drop: tuple[str, ...] = (),
    version: str = MODERN,
    accept: str = "application/json, text/event-stream",
) -> httpx.Response:
    """POST ``body`` the way a 2026-07-28 client does (routing headers derived from it);
    ``drop`` removes headers by name, then ``headers`` adds or overrides."""
    h = modern_headers(version=version)
    h["Accept"] = accept
    h.update(modern_routing(body))
    for name in drop:
        h = {k: v for k, v in h.items() if k.lower() != name.lower()}
    h.update(headers or {})
    return client.post(url, content=encode(body), headers=h)


def messages(resp: httpx.Response) -> list[Any]:
    """Every JSON-RPC message of a reply: the body, or each SSE event's data."""
    if resp.headers.get("content-type", "").startswith("text/event-stream"):
        out: list[Any] = []
        for event in resp.text.split("\n\n"):
            data = [line[5:].lstrip() for line in event.split("\n") if line.startswith("data:")]
            if data and "".join(data):
                out.append(json.loads("\n".join(data)))
        return out
    return [resp.json()]


def reply(resp: httpx.Response) -> dict[str, Any]:
    """The final message of a reply (its response)."""
    msg = messages(resp)[-1]
    assert isinstance(msg, dict)
    return msg


def call_tool(name: str, arguments: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    return modern_request("tools/call", params, **kw)


def b64(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


# --------------------------------------------------------------------------- results


def test_discover(client: httpx.Client, url: str) -> None:
    body = modern_request("server/discover", id="d1")
    resp = send(client, url, body)
    assert resp.status_code == 200, resp.text
    assert "mcp-session-id" not in resp.headers
    result = assert_result(resp.json(), "d1")
    assert result["supportedVersions"] == [
        MODERN,
        "2025-11-25",
        "2025-06-18",
        "2025-03-26",
        "2024-11-05",
    ]
    caps = result["capabilities"]
    assert {"tools", "prompts", "resources", "completions"} <= set(caps), caps
    assert caps["extensions"]["io.jetmcp/batch"] == {"maxBatch": 256}
    assert result["instructions"] == "Fixtures for the 2026-07-28 wire tests."
    assert isinstance(result["ttlMs"], int) and result["ttlMs"] >= 0
    assert result["cacheScope"] in ("public", "private")
    assert result["resultType"] == "complete"
    assert result["_meta"][META_SERVER_INFO] == {
        "name": "jetmcp-modern-tests",
        "title": "jetmcp modern wire tests",
        "version": "1.2.3",
    }


def test_every_result_is_complete_and_names_the_server(client: httpx.Client, url: str) -> None:
    for body in (
        modern_request("tools/list"),
        modern_request("prompts/list"),
        modern_request("resources/list"),
        modern_request("resources/read", {"uri": "test://here"}),
        modern_request("prompts/get", {"name": "hello", "arguments": {"name": "Ada"}}),
        call_tool("deploy", {"region": "us"}, meta=None),
    ):
        headers = {"Mcp-Param-Region": "us"} if body["method"] == "tools/call" else None
        resp = send(client, url, body, headers=headers)
        assert resp.status_code == 200, (body, resp.text)
        result = assert_result(reply(resp), body["id"])
        assert result["resultType"] == "complete", result
        assert result["_meta"][META_SERVER_INFO]["name"] == "jetmcp-modern-tests", result


def test_legacy_results_stay_as_they_were(client: httpx.Client, url: str) -> None:
    resp = post(client, url, request("tools/call", {"name": "cancelled"}, id=1))
    result = assert_result(resp.json(), 1)
    assert "resultType" not in result and "_meta" not in result, result


def test_handler_meta_is_kept_beside_the_server_identity(client: httpx.Client, url: str) -> None:
    body = modern_request(
        "completion/complete",
        {"ref": {"type": "ref/prompt", "name": "hello"}, "argument": {"name": "name", "value": ""}},
    )
    result = assert_result(send(client, url, body).json(), body["id"])
    assert result["_meta"]["io.jetmcp.tests/own"] == 1
    assert META_SERVER_INFO in result["_meta"]
    assert result["completion"] == {"values": ["x"]}


def test_handler_result_type_is_kept(client: httpx.Client, url: str) -> None:
    body = modern_request("prompts/get", {"name": "ask"})
    resp = send(client, url, body)
    assert resp.status_code == 200
    result = assert_result(resp.json(), body["id"])
    assert result["resultType"] == "input_required"
    assert result["inputRequests"]["who"]["method"] == "elicitation/create"
    assert META_SERVER_INFO in result["_meta"]


# --------------------------------------------------------------------------- era routing


@pytest.mark.parametrize("version", [None, *REVISIONS])
def test_legacy_headers_stay_legacy(client: httpx.Client, url: str, version: str | None) -> None:
    resp = post(client, url, request("ping", id=7), version=version)
    assert resp.status_code == 200
    assert resp.json() == {"jsonrpc": "2.0", "id": 7, "result": {}}


def test_ping_is_unknown_at_2026(client: httpx.Client, url: str) -> None:
    resp = send(client, url, modern_request("ping", id=7))
    assert resp.status_code == 404
    assert_error(resp.json(), -32601, 7)


def test_initialize_without_modern_meta_is_the_legacy_handshake(
    client: httpx.Client, url: str
) -> None:
    body = initialize_request("2025-11-25", id="i1")
    resp = send(client, url, body)
    assert resp.status_code == 200, resp.text
    assert assert_result(resp.json(), "i1")["protocolVersion"] == "2025-11-25"
    assert resp.headers.get("mcp-session-id")


def test_initialize_with_modern_meta_is_unknown(client: httpx.Client, url: str) -> None:
    body = modern_request("initialize", {"protocolVersion": MODERN, "capabilities": {}}, id="i2")
    resp = send(client, url, body)
    assert resp.status_code == 404
    assert_error(resp.json(), -32601, "i2")
    assert "mcp-session-id" not in resp.headers


# --------------------------------------------------------------------------- check order


def test_parse_error(client: httpx.Client, url: str) -> None:
    resp = send(client, url, b'{"jsonrpc":"2.0","id":1,', headers={"Mcp-Method": "tools/list"})
    assert resp.status_code == 400
    assert_error(resp.json(), -32700, None)


def test_invalid_request(client: httpx.Client, url: str) -> None:
    resp = send(client, url, {"jsonrpc": "2.0", "id": 3}, headers={"Mcp-Method": "tools/list"})
    assert resp.status_code == 400
    assert_error(resp.json(), -32600, 3)


def test_headers_are_checked_before_meta(client: httpx.Client, url: str) -> None:
    body = request("tools/list", {}, id=11)  # no _meta either
    resp = send(client, url, body, drop=("Mcp-Method",))
    assert resp.status_code == 400
    assert_error(resp.json(), -32020, 11)


def test_header_version_differing_from_body_is_a_mismatch(client: httpx.Client, url: str) -> None:
    # Even when the body's version is one no server serves: the headers come first.
    body = modern_request("server/discover", id=12, meta=modern_meta("v999.0.0"))
    resp = send(client, url, body)
    assert resp.status_code == 400
    assert_error(resp.json(), -32020, 12)


def test_unsupported_version(client: httpx.Client, url: str) -> None:
    body = modern_request("server/discover", id=13, meta=modern_meta("v999.0.0"))
    resp = send(client, url, body, version="v999.0.0")
    assert resp.status_code == 400
    error = resp.json()
    assert_error(error, -32022, 13)
    assert error["error"]["data"]["requested"] == "v999.0.0"
    assert MODERN in error["error"]["data"]["supported"]


def caps_only() -> dict[str, Any]:
    return {"io.modelcontextprotocol/clientCapabilities": {}}


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"_meta": {}},
        {"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}},
        {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}},
        {"_meta": {"io.modelcontextprotocol/protocolVersion": 2026, **caps_only()}},
        {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": [],
            }
        },
        {"_meta": "not an object"},
    ],
)
def test_missing_meta_fields(client: httpx.Client, url: str, params: dict[str, Any]) -> None:
    body = request("server/discover", params, id=14)
    resp = send(client, url, body)
    assert resp.status_code == 400
    assert_error(resp.json(), -32602, 14)


def test_params_must_be_an_object(client: httpx.Client, url: str) -> None:
    body = {"jsonrpc": "2.0", "id": 15, "method": "tools/list", "params": [1]}
    resp = send(client, url, body)
    assert resp.status_code == 400
    assert_error(resp.json(), -32602, 15)


def test_client_info_is_optional(client: httpx.Client, url: str) -> None:
    meta = modern_meta()
    del meta["io.modelcontextprotocol/clientInfo"]
    body = modern_request("server/discover", id=16, meta=meta)
    resp = send(client, url, body)
    assert resp.status_code == 200, resp.text
    assert_result(resp.json(), 16)


@pytest.mark.parametrize(
    "method",
    [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "tasks/result",
        "tasks/list",
        "unknown/method",
    ],
)
def test_unknown_and_legacy_only_methods_are_404(
    client: httpx.Client, url: str, method: str
) -> None:
    body = modern_request(method, {"level": "info", "uri": "test://here"}, id=f"m-{method}")
    resp = send(client, url, body)
    assert resp.status_code == 404
    assert_error(resp.json(), -32601, f"m-{method}")


def test_missing_client_capability_is_400(client: httpx.Client, url: str) -> None:
    resp = send(client, url, call_tool("needs_sampling", id=17))
    assert resp.status_code == 400
    error = resp.json()
    assert_error(error, -32021, 17)
    assert error["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}
    # Capabilities are per request, never remembered: the same tool now runs.
    meta = modern_meta(capabilities={"sampling": {}})
    resp = send(client, url, call_tool("needs_sampling", id=18, meta=meta))
    assert resp.status_code == 200
    assert tool_text(assert_result(resp.json(), 18)) == "sampling declared"
    resp = send(client, url, call_tool("needs_sampling", id=19))
    assert resp.status_code == 400


def test_resource_not_found_is_400_with_its_uri(client: httpx.Client, url: str) -> None:
    body = modern_request("resources/read", {"uri": "test://missing"}, id=20)
    resp = send(client, url, body)
    assert resp.status_code == 400
    error = resp.json()
    assert_error(error, -32602, 20)
    assert error["error"]["data"] == {"uri": "test://missing"}


def test_unknown_tool_is_400(client: httpx.Client, url: str) -> None:
    resp = send(client, url, call_tool("no_such_tool", id=21))
    assert resp.status_code == 400
    assert_error(resp.json(), -32602, 21)


def test_internal_error_is_200(client: httpx.Client, url: str) -> None:
    resp = send(client, url, modern_request("resources/templates/list", id=22))
    assert resp.status_code == 200
    assert_error(resp.json(), -32603, 22)


# --------------------------------------------------------------------------- Mcp-Method / Mcp-Name


@pytest.mark.parametrize("header", ["mcp-method", "MCP-METHOD", "Mcp-Method"])
def test_header_names_are_case_insensitive(client: httpx.Client, url: str, header: str) -> None:
    body = modern_request("tools/list", id=30)
    resp = send(client, url, body, drop=("Mcp-Method",), headers={header: "tools/list"})
    assert resp.status_code == 200, resp.text


@pytest.mark.parametrize(
    ("body", "headers"),
    [
        (modern_request("tools/list"), {"Mcp-Method": "prompts/list"}),
        (modern_request("tools/list"), {"Mcp-Method": "TOOLS/LIST"}),
        (call_tool("cancelled"), {"Mcp-Name": "slow"}),
        (call_tool("cancelled"), {"Mcp-Name": "CANCELLED"}),
        (modern_request("prompts/get", {"name": "hello"}), {"Mcp-Name": "hallo"}),
        (modern_request("resources/read", {"uri": "test://here"}), {"Mcp-Name": "test://there"}),
        (modern_request("tasks/get", {"taskId": "t-1"}), {"Mcp-Name": "t-2"}),
        (modern_request("tasks/cancel", {"taskId": "t-1"}), {"Mcp-Name": "=?base64?dC0y?="}),
        (modern_request("tools/list"), {"Mcp-Name": "x"} | {"Mcp-Method": "tools/call"}),
    ],
)
def test_routing_header_mismatch(
    client: httpx.Client, url: str, body: dict[str, Any], headers: dict[str, str]
) -> None:
    resp = send(client, url, body, headers=headers)
    assert resp.status_code == 400
    assert_error(resp.json(), -32020, body["id"])


@pytest.mark.parametrize(
    "body",
    [
        call_tool("cancelled"),
        modern_request("prompts/get", {"name": "hello"}),
        modern_request("resources/read", {"uri": "test://here"}),
        modern_request("tasks/get", {"taskId": "t-1"}),
        modern_request("tasks/update", {"taskId": "t-1"}),
        modern_request("tasks/cancel", {"taskId": "t-1"}),
    ],
)
def test_missing_mcp_name(client: httpx.Client, url: str, body: dict[str, Any]) -> None:
    resp = send(client, url, body, drop=("Mcp-Name",))
    assert resp.status_code == 400
    assert_error(resp.json(), -32020, body["id"])


def test_mcp_name_is_trimmed_and_may_be_base64(client: httpx.Client, url: str) -> None:
    body = call_tool("cancelled", id=31)
    headers = modern_headers("tools/call") | {"Mcp-Name": "  cancelled\t", "Connection": "close"}
    status, _ = raw_exchange(url, body, headers)
    assert status == 200
    body = modern_request("prompts/get", {"name": "hello", "arguments": {"name": "Ö"}}, id=32)
    resp = send(client, url, body, headers={"Mcp-Name": b64("hello")})
    assert resp.status_code == 200, resp.text
    # A matching task id passes the header check (what the tasks handler says is its own).
    body = modern_request("tasks/get", {"taskId": "t-1"}, id=33)
    assert send(client, url, body).json()["error"]["code"] != -32020


# --------------------------------------------------------------------------- Mcp-Param-*


def deploy(
    arguments: dict[str, Any], headers: dict[str, str], client: httpx.Client, url: str
) -> httpx.Response:
    return send(client, url, call_tool("deploy", arguments), headers=headers)


@pytest.mark.parametrize(
    ("arguments", "headers"),
    [
        ({}, {}),
        ({"note": "not mirrored"}, {}),
        ({"region": None}, {}),
        ({"region": "us-west"}, {"Mcp-Param-Region": "us-west"}),
        ({"region": "us-west"}, {"mcp-param-region": "us-west"}),
        ({"region": "zürich"}, {"Mcp-Param-Region": b64("zürich")}),
        ({"region": " padded "}, {"Mcp-Param-Region": b64(" padded ")}),
        ({"region": "=?base64?SGVsbG8="}, {"Mcp-Param-Region": "=?base64?SGVsbG8="}),
        ({"region": "SGVsbG8="}, {"Mcp-Param-Region": "SGVsbG8="}),
        ({"count": 42}, {"Mcp-Param-Count": "42"}),
        ({"count": 42}, {"Mcp-Param-Count": "42.0"}),
        ({"dry": True}, {"Mcp-Param-Dry-Run": "true"}),
        ({"dry": False}, {"Mcp-Param-Dry-Run": "false"}),
        ({"where": {"zone": "z1"}}, {"Mcp-Param-Zone": "z1"}),
        (
            {"region": "eu", "count": 1, "dry": False, "where": {"zone": "z"}},
            {
                "Mcp-Param-Region": "eu",
                "Mcp-Param-Count": "1",
                "Mcp-Param-Dry-Run": "false",
                "Mcp-Param-Zone": "z",
            },
        ),
    ],
)
def test_param_headers_accepted(
    client: httpx.Client, url: str, arguments: dict[str, Any], headers: dict[str, str]
) -> None:
    resp = deploy(arguments, headers, client, url)
    assert resp.status_code == 200, resp.text
    result = reply(resp)["result"]
    assert not result["isError"], result
    assert json.loads(tool_text(result)) == {k: v for k, v in arguments.items() if v is not None}


def test_padded_param_header_is_trimmed(url: str) -> None:
    body = call_tool("deploy", {"region": "us-west"})
    headers = modern_headers("tools/call", "deploy")
    headers |= {"Mcp-Param-Region": "   us-west ", "Connection": "close"}
    status, answer = raw_exchange(url, body, headers)
    assert status == 200, answer
    assert json.loads(tool_text(answer["result"])) == {"region": "us-west"}


@pytest.mark.parametrize(
    ("arguments", "headers"),
    [
        ({"region": "us"}, {}),
        ({"region": "us"}, {"Mcp-Param-Region": "eu"}),
        ({"region": "us"}, {"Mcp-Param-Region": "US"}),
        ({}, {"Mcp-Param-Region": "us"}),
        ({"region": "Hello"}, {"Mcp-Param-Region": "=?base64?SGVsbG8?="}),
        ({"region": "Hello"}, {"Mcp-Param-Region": "=?base64?SGVs!!!bG8=?="}),
        ({"count": 42}, {"Mcp-Param-Count": "41"}),
        ({"count": 42}, {}),
        ({"dry": True}, {"Mcp-Param-Dry-Run": "TRUE"}),
        ({"where": {"zone": "z1"}}, {}),
        ({"where": {"zone": "z1"}}, {"Mcp-Param-Zone": "z2"}),
    ],
)
def test_param_header_mismatch(
    client: httpx.Client, url: str, arguments: dict[str, Any], headers: dict[str, str]
) -> None:
    resp = deploy(arguments, headers, client, url)
    assert resp.status_code == 400, resp.text
    assert resp.json()["error"]["code"] == -32020


# --------------------------------------------------------------------------- transport


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_get_and_delete_are_405(client: httpx.Client, url: str, method: str) -> None:
    resp = client.request(method, url, headers=modern_headers(**{"Mcp-Session-Id": "s"}))
    assert resp.status_code == 405
    assert resp.headers["allow"] == "POST"


def test_session_and_last_event_id_are_ignored(client: httpx.Client, url: str) -> None:
    extra = {"Mcp-Session-Id": "no-such-session", "Last-Event-ID": "p1-3"}
    resp = send(client, url, modern_request("tools/list", id=40), headers=extra)
    assert resp.status_code == 200, resp.text
    assert_result(resp.json(), 40)
    assert "mcp-session-id" not in resp.headers


def test_served_without_a_session_where_sessions_are_required(client: httpx.Client) -> None:
    server = HttpServer("--require-session", app=MODERN_APP)
    try:
        resp = send(client, server.url, modern_request("tools/list", id=41))
        assert resp.status_code == 200, resp.text
        legacy = post(client, server.url, request("tools/list", id=42))
        assert legacy.status_code == 400
    finally:
        server.stop()


def test_notifications_and_responses_are_202(client: httpx.Client, url: str) -> None:
    note = notification("notifications/cancelled", {"requestId": "nobody"})
    resp = send(client, url, note)
    assert resp.status_code == 202 and resp.content == b""
    answer = {"jsonrpc": "2.0", "id": "x-1", "result": {}}
    resp = send(client, url, answer, headers={"Mcp-Method": "x"})
    assert resp.status_code == 202 and resp.content == b""


def test_stream_carries_progress_and_logs_then_the_result(client: httpx.Client, url: str) -> None:
    meta = modern_meta(progressToken="p-1", **{"io.modelcontextprotocol/logLevel": "info"})
    resp = send(client, url, call_tool("chatty", id=50, meta=meta))
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("text/event-stream")
    assert resp.headers["x-accel-buffering"] == "no"
    assert "mcp-session-id" not in resp.headers
    msgs = messages(resp)
    methods = [m.get("method") for m in msgs[:-1]]
    assert methods == [
        "notifications/progress",
        "notifications/message",
        "notifications/progress",
    ], msgs
    progress = [m for m in msgs if m.get("method") == "notifications/progress"]
    assert all(m["params"]["progressToken"] == "p-1" for m in progress), progress
    result = assert_result(msgs[-1], 50)
    assert result["resultType"] == "complete"
    assert tool_text(result) == "chatty done"


def test_no_log_without_a_log_level(client: httpx.Client, url: str) -> None:
    meta = modern_meta(progressToken=7)
    msgs = messages(send(client, url, call_tool("chatty", id=51, meta=meta)))
    assert [m.get("method") for m in msgs[:-1]] == ["notifications/progress"] * 2, msgs
    msgs = messages(send(client, url, call_tool("chatty", id=52)))
    assert len(msgs) == 1
    assert tool_text(assert_result(msgs[0], 52)) == "chatty done"


def test_json_only_clients_get_json(client: httpx.Client, url: str) -> None:
    meta = modern_meta(progressToken=7)
    resp = send(client, url, call_tool("chatty", id=53, meta=meta), accept="application/json")
    assert resp.headers["content-type"] == "application/json"
    assert tool_text(assert_result(resp.json(), 53)) == "chatty done"


def test_no_server_requests_on_the_stream(client: httpx.Client, url: str) -> None:
    resp = send(client, url, call_tool("asks_client", id=54))
    msgs = messages(resp)
    assert all(not m.get("method") for m in msgs), msgs
    assert tool_text(assert_result(msgs[-1], 54)) == "refused -32603"


def raw_exchange(url: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
    """One POST with headers sent byte for byte (httpx refuses padded values); the status
    and the JSON body (send ``Connection: close``)."""
    sock = raw_http_post(url, body, headers)
    data = b""
    with sock:
        while chunk := sock.recv(65536):
            data += chunk
    head, _, payload = data.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), json.loads(payload)


def wait_cancelled(client: httpx.Client, url: str, tag: str) -> None:
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        resp = send(client, url, call_tool("cancelled"))
        if tag in tool_text(reply(resp)["result"]).split(","):
            return
        time.sleep(0.05)
    raise AssertionError(f"the handler of {tag} was not cancelled")


@pytest.mark.parametrize("accept", ["application/json, text/event-stream", "application/json"])
def test_disconnect_cancels_the_request(client: httpx.Client, url: str, accept: str) -> None:
    tag = unique_id("gone")
    body = call_tool("slow", {"tag": tag}, meta=modern_meta(progressToken=1))
    headers = modern_routing(body) | modern_headers() | {"Accept": accept}
    sock = raw_http_post(url, body, headers)
    time.sleep(0.3)  # the handler is running
    sock.close()
    wait_cancelled(client, url, tag)


def test_a_finished_request_is_not_cancelled(client: httpx.Client, url: str) -> None:
    tag = unique_id("kept")
    resp = send(client, url, call_tool("slow", {"tag": tag, "ms": 50}))
    assert tool_text(reply(resp)["result"]) == f"slept {tag}"
    listed = tool_text(reply(send(client, url, call_tool("cancelled")))["result"])
    assert tag not in listed.split(",")


def test_legacy_session_traffic_is_unaffected(client: httpx.Client, url: str) -> None:
    init = post(client, url, initialize_request("2025-06-18", id=1))
    session = init.headers["mcp-session-id"]
    resp = post(client, url, request("ping", id=2), version="2025-06-18", session=session)
    assert resp.json() == {"jsonrpc": "2.0", "id": 2, "result": {}}
    # The same session id on a modern request is ignored: served statelessly.
    resp = send(
        client, url, modern_request("tools/list", id=3), headers={"Mcp-Session-Id": session}
    )
    assert resp.status_code == 200
    assert assert_result(resp.json(), 3)["resultType"] == "complete"
    resp = post(client, url, request("ping", id=4), version="2025-06-18", session=session)
    assert resp.json() == {"jsonrpc": "2.0", "id": 4, "result": {}}


def open_listeners(client: httpx.Client, url: str) -> str:
    return tool_text(reply(send(client, url, call_tool("listeners")))["result"])


def test_listen_stream_ends_when_the_client_closes_it(client: httpx.Client, url: str) -> None:
    body = modern_request(
        "subscriptions/listen", {"notifications": {"toolsListChanged": True}}, id="listen-1"
    )
    headers = modern_headers() | modern_routing(body)
    with client.stream("POST", url, content=encode(body), headers=headers) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        assert resp.headers["x-accel-buffering"] == "no"
        assert "mcp-session-id" not in resp.headers
        events = resp.iter_lines()

        def next_message() -> dict[str, Any]:
            for line in events:
                if line.startswith("data:"):
                    msg: dict[str, Any] = json.loads(line[5:])
                    return msg
            raise AssertionError("the listen stream ended")

        ack = next_message()
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen-1"
        assert open_listeners(client, url) == "1"
        send(client, url, call_tool("change_tools"))
        changed = next_message()
        assert changed["method"] == "notifications/tools/list_changed"
        assert changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen-1"
    # Closing the response is how the client ends it: the server lets go of the stream.
    deadline = time.monotonic() + 5.0
    while open_listeners(client, url) != "0":
        assert time.monotonic() < deadline, "the listen request outlived its stream"
        time.sleep(0.05)
