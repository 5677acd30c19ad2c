"""Streamable HTTP against a real ``jetmcp run --transport http``: statuses, headers, sessions,
single-message errors, raw ids, and the demo app's tools, resources and prompts."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from harness.http import open_session, post
from harness.messages import (
    BATCHING,
    REVISIONS,
    assert_error,
    assert_result,
    initialize_request,
    json_headers,
    notification,
    request,
    tool_text,
)

make_request = request

VISIBLE_ASCII = re.compile(r"^[\x21-\x7e]+$")


def error_body(resp: httpx.Response) -> dict[str, Any]:
    assert resp.headers.get("content-type", "").startswith("application/json"), resp.headers
    body = resp.json()
    assert isinstance(body, dict) and "error" in body, body
    assert body["id"] is None, body
    return body


# ------------------------------------------------------------------ initialize and sessions


@pytest.mark.parametrize("revision", REVISIONS)
def test_initialize_negotiates_and_opens_a_session(
    client: httpx.Client, http_url: str, revision: str
) -> None:
    resp = post(client, http_url, initialize_request(revision, id=1))
    assert resp.status_code == 200, resp.text
    result = assert_result(resp.json(), 1)
    assert result["protocolVersion"] == revision
    assert isinstance(result["capabilities"], dict)
    assert isinstance(result["serverInfo"]["name"], str)
    session = resp.headers.get("mcp-session-id")
    assert session and VISIBLE_ASCII.match(session), session


def test_initialize_with_an_unknown_version_gets_the_latest(
    client: httpx.Client, http_url: str
) -> None:
    resp = post(client, http_url, initialize_request("2099-01-01", id="x"))
    assert resp.status_code == 200, resp.text
    assert assert_result(resp.json(), "x")["protocolVersion"] == "2025-11-25"
    assert resp.headers.get("mcp-session-id")


def test_sessions_are_distinct(client: httpx.Client, http_url: str) -> None:
    ids = {open_session(client, http_url, "2025-06-18") for _ in range(3)}
    assert len(ids) == 3


def test_unknown_session_is_404(client: httpx.Client, http_url: str) -> None:
    resp = post(client, http_url, request("ping", id=1), session="no-such-session")
    assert resp.status_code == 404
    error_body(resp)


def test_delete_ends_the_session(client: httpx.Client, http_url: str) -> None:
    session = open_session(client, http_url, "2025-03-26")
    assert post(client, http_url, request("ping", id=1), session=session).status_code == 200
    resp = client.delete(http_url, headers={"Mcp-Session-Id": session})
    assert resp.status_code == 204
    assert resp.content == b""
    after = post(client, http_url, request("ping", id=2), session=session)
    assert after.status_code == 404
    again = client.delete(http_url, headers={"Mcp-Session-Id": session})
    assert again.status_code == 404


def test_delete_unknown_session_is_404(client: httpx.Client, http_url: str) -> None:
    resp = client.delete(http_url, headers={"Mcp-Session-Id": "never-existed"})
    assert resp.status_code == 404


@pytest.mark.parametrize("method", ["PUT", "PATCH"])
def test_other_methods_are_405(client: httpx.Client, http_url: str, method: str) -> None:
    # GET opens the session's SSE stream: tests/transports/http/test_http_streaming.py.
    resp = client.request(method, http_url, headers=json_headers())
    assert resp.status_code == 405
    assert "POST" in resp.headers.get("allow", "")


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "application/jsonx"]
)
def test_non_json_content_type_is_415(
    client: httpx.Client, http_url: str, content_type: str
) -> None:
    resp = post(client, http_url, request("ping", id=1), headers={"Content-Type": content_type})
    assert resp.status_code == 415
    error_body(resp)


def test_json_content_type_with_charset_is_accepted(client: httpx.Client, http_url: str) -> None:
    resp = post(
        client,
        http_url,
        request("ping", id=1),
        headers={"Content-Type": "application/json; charset=utf-8"},
    )
    assert resp.status_code == 200
    assert resp.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}


def test_missing_content_type_is_415(client: httpx.Client, http_url: str) -> None:
    resp = client.post(
        http_url,
        content=b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
        headers={"Accept": "application/json, text/event-stream"},
    )
    assert resp.status_code == 415


def test_accept_html_only_is_406(client: httpx.Client, http_url: str) -> None:
    resp = post(client, http_url, request("ping", id=1), headers={"Accept": "text/html"})
    assert resp.status_code == 406
    error_body(resp)


#: For a refusal before the body is read: the server closes that connection after its
#: answer, and a pooled client could send its next request on it before the close arrives.
CLOSE = {"Connection": "close"}


def test_body_over_the_limit_is_413(client: httpx.Client, strict_url: str) -> None:
    big = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"pad": "x" * 2048}}
    resp = post(client, strict_url, big, headers=CLOSE)
    assert resp.status_code == 413
    error_body(resp)


def test_chunked_body_over_the_limit_is_413(client: httpx.Client, strict_url: str) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"'
        for _ in range(8):
            yield b"x" * 256
        yield b'"}}'

    resp = client.post(strict_url, content=chunks(), headers=json_headers(**CLOSE))
    assert resp.status_code == 413


def test_body_under_the_limit_is_served(client: httpx.Client, strict_url: str) -> None:
    resp = post(client, strict_url, initialize_request("2025-06-18", id=1))
    assert resp.status_code == 200, resp.text


@pytest.mark.parametrize("version", ["1999-01-01", "2025-13-01", "latest"])
def test_unsupported_protocol_version_header_is_400(
    client: httpx.Client, http_url: str, version: str
) -> None:
    # A header naming no legacy revision sends the request down the 2026-07-28 path, whose
    # refusals (here: no Mcp-Method header, no _meta) are 400 and echo the id
    # (tests/transports/http/test_modern_http.py has the rest).
    resp = post(client, http_url, request("ping", id=1), version=version)
    assert resp.status_code == 400
    body = resp.json()
    assert body["id"] == 1 and body["error"]["code"] == -32020, body


@pytest.mark.parametrize("revision", REVISIONS)
def test_supported_protocol_version_header_is_served(
    client: httpx.Client, http_url: str, revision: str
) -> None:
    resp = post(client, http_url, request("ping", id=1), version=revision)
    assert resp.status_code == 200
    assert resp.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}


@pytest.mark.parametrize(
    ("header", "status"),
    [
        ("2025-11-25", 200),  # the session's revision, as negotiated
        (None, 200),  # no header: the session's revision
        ("2025-06-18", 400),  # another legacy revision than the session's
        ("2025-13-01", 400),  # no revision at all (the 2026-07-28 path refuses it)
    ],
)
def test_a_session_request_is_held_to_the_session_s_revision(
    client: httpx.Client, http_url: str, header: str | None, status: int
) -> None:
    session = open_session(client, http_url, "2025-11-25")
    headers = {"mcp-session-id": session}
    if header is not None:
        headers["mcp-protocol-version"] = header
    body = request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}, id=7)
    resp = post(client, http_url, body, headers=headers)
    assert resp.status_code == status, resp.text
    if status == 200:
        assert tool_text(assert_result(resp.json(), 7)) == "5"
    elif header == "2025-06-18":
        assert "does not match the session's 2025-11-25" in error_body(resp)["error"]["message"]


def test_require_session_refuses_sessionless_requests(
    client: httpx.Client, strict_url: str
) -> None:
    resp = post(client, strict_url, request("tools/list", id=1))
    assert resp.status_code == 400
    error_body(resp)
    batch = post(client, strict_url, [request("tools/list", id=1)])
    assert batch.status_code == 400
    # A batched initialize is no way around it.
    sneaky = post(client, strict_url, [initialize_request("2025-03-26", id=1)])
    assert sneaky.status_code == 400
    assert "mcp-session-id" not in sneaky.headers
    session = open_session(client, strict_url, "2025-03-26")
    ok = post(client, strict_url, request("tools/list", id=2), session=session)
    assert ok.status_code == 200
    assert assert_result(ok.json(), 2)["tools"]


def test_notification_only_body_is_202(client: httpx.Client, http_url: str) -> None:
    resp = post(client, http_url, notification("notifications/initialized"))
    assert resp.status_code == 202
    assert resp.content == b""
    response = post(client, http_url, {"jsonrpc": "2.0", "id": "s1", "result": {}})
    assert response.status_code == 202
    assert response.content == b""


@pytest.mark.parametrize("path", ["/", "/mcp/", "/mcpx", "/other"])
def test_wrong_path_is_404(client: httpx.Client, http_server: Any, path: str) -> None:
    resp = post(client, http_server.base + path, request("ping", id=1))
    assert resp.status_code == 404


# ------------------------------------------------------------------ single-message errors


def test_invalid_json_is_parse_error(client: httpx.Client, http_url: str) -> None:
    for raw in (b'{"jsonrpc":"2.0","id":1,"method":', b"not json", b"", b"\xff\xfe"):
        resp = post(client, http_url, raw)
        assert resp.status_code == 400, raw
        assert_error(error_body(resp), -32700, None)


def test_unsafe_id_in_a_single_message_is_400_with_null_id(
    client: httpx.Client, http_url: str
) -> None:
    for raw_id in (b"9007199254740992", b"-9007199254740992", b"1e400", b"1.5", b"1e3"):
        raw = b'{"jsonrpc":"2.0","id":' + raw_id + b',"method":"ping"}'
        resp = post(client, http_url, raw)
        assert resp.status_code == 400, raw
        assert_error(error_body(resp), -32600, None)
        assert raw_id not in resp.content


@pytest.mark.parametrize(
    "raw_id",
    [b"9007199254740991", b"-9007199254740991", b"-0", b"0", b'"x\\u00e9y"', b'""', b'"\\""'],
    ids=["max-safe", "min-safe", "minus-zero", "zero", "escaped", "empty-string", "quote"],
)
def test_safe_ids_come_back_byte_identical(
    client: httpx.Client, http_url: str, raw_id: bytes
) -> None:
    raw = b'{"jsonrpc":"2.0","id":' + raw_id + b',"method":"ping"}'
    resp = post(client, http_url, raw)
    assert resp.status_code == 200
    assert b'"id":' + raw_id + b"," in resp.content or resp.content.endswith(
        b'"id":' + raw_id + b"}"
    ), resp.content
    batch = post(client, http_url, b"[" + raw + b"]")
    assert b'"id":' + raw_id in batch.content, batch.content


def test_unknown_method_is_32601(client: httpx.Client, http_url: str) -> None:
    resp = post(client, http_url, request("no/such/method", id=1))
    assert_error(resp.json(), -32601, 1)


def test_unknown_tool_is_32602(client: httpx.Client, http_url: str) -> None:
    resp = post(client, http_url, request("tools/call", {"name": "nope", "arguments": {}}, id=1))
    assert_error(resp.json(), -32602, 1)


def test_unknown_resource_is_32002(client: httpx.Client, http_url: str) -> None:
    resp = post(client, http_url, request("resources/read", {"uri": "demo://nope"}, id=1))
    assert_error(resp.json(), -32002, 1)


def test_unknown_prompt_is_32602(client: httpx.Client, http_url: str) -> None:
    resp = post(client, http_url, request("prompts/get", {"name": "nope"}, id=1))
    assert_error(resp.json(), -32602, 1)


def test_params_not_an_object_is_32602(client: httpx.Client, http_url: str) -> None:
    resp = post(client, http_url, b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[1]}')
    assert_error(resp.json(), -32602, 1)


# ------------------------------------------------------------------ the demo app


@pytest.fixture(params=REVISIONS)
def demo(request: pytest.FixtureRequest, client: httpx.Client, http_url: str) -> Any:
    revision = request.param
    session = open_session(client, http_url, revision)

    def call(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        resp = post(client, http_url, make_request(method, params, id="d"), session=session)
        assert resp.status_code == 200, resp.text
        return assert_result(resp.json(), "d")

    call.revision = revision  # type: ignore[attr-defined]
    return call


def test_demo_tools_are_listed(demo: Any) -> None:
    tools = {t["name"]: t for t in demo("tools/list")["tools"]}
    assert {"add", "echo", "sleep", "fail"} <= set(tools)
    for tool in tools.values():
        assert tool["inputSchema"]["type"] == "object"


def test_demo_add(demo: Any) -> None:
    result = demo("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    assert tool_text(result) == "3"
    assert not result.get("isError")
    if demo.revision in BATCHING:
        assert "structuredContent" not in result
    else:
        assert result["structuredContent"] == {"result": 3}


def test_demo_echo(demo: Any) -> None:
    result = demo("tools/call", {"name": "echo", "arguments": {"text": "h\u00e9llo"}})
    assert "h\u00e9llo" in tool_text(result)


def test_demo_fail_is_a_tool_error(demo: Any) -> None:
    result = demo("tools/call", {"name": "fail", "arguments": {}})
    assert result["isError"] is True
    assert tool_text(result)


def test_demo_bad_arguments_are_reported(demo: Any, client: httpx.Client, http_url: str) -> None:
    resp = post(
        client,
        http_url,
        request("tools/call", {"name": "add", "arguments": {"a": "one"}}, id=5),
        version=demo.revision,
    )
    body = resp.json()
    # Either a -32602 or a tool error result: never a success, never a 500.
    assert resp.status_code == 200
    if "error" in body:
        assert body["error"]["code"] == -32602
    else:
        assert body["result"]["isError"] is True


def test_demo_resources(demo: Any) -> None:
    readme = demo("resources/read", {"uri": "demo://readme"})["contents"]
    assert readme[0]["uri"] == "demo://readme"
    assert readme[0].get("text")
    item = demo("resources/read", {"uri": "demo://items/42"})["contents"]
    assert item[0]["uri"] == "demo://items/42"
    assert "42" in (item[0].get("text") or "")
    listed = {r["uri"] for r in demo("resources/list")["resources"]}
    assert "demo://readme" in listed


def test_demo_prompt(demo: Any) -> None:
    result = demo("prompts/get", {"name": "greet", "arguments": {"name": "Ada"}})
    message = result["messages"][0]
    assert message["role"] == "user"
    assert message["content"] == {"type": "text", "text": "Hello, Ada!"}
    names = {p["name"] for p in demo("prompts/list")["prompts"]}
    assert "greet" in names


# ------------------------------------------------------------------ limits


def nested(depth: int) -> bytes:
    head = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":'
    return head + b"[" * depth + b"]" * depth + b"}}"


def test_nesting_deeper_than_max_depth_is_a_parse_error(
    client: httpx.Client, http_url: str
) -> None:
    resp = post(client, http_url, nested(500))  # default --max-depth is 100
    assert resp.status_code == 400
    assert_error(error_body(resp), -32700, None)
    ok = post(client, http_url, nested(20))
    assert ok.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}


# ------------------------------------------------------------------ Origin (DNS rebinding)
# Every legacy revision says the server MUST validate Origin; 2025-11-25 spells out 403 for an
# Origin that is present and not allowed. Localhost origins are the default allowance
# (Settings.allowed_origins adds to it).


@pytest.mark.parametrize("origin", ["http://evil.example", "https://attacker.test:8443", "null"])
def test_foreign_origin_is_403(client: httpx.Client, http_url: str, origin: str) -> None:
    init = initialize_request("2025-11-25", id=1)
    resp = post(client, http_url, init, headers={"Origin": origin})
    assert resp.status_code == 403, (resp.status_code, resp.text)
    assert "mcp-session-id" not in resp.headers


def test_localhost_origin_and_no_origin_are_served(client: httpx.Client, http_server: Any) -> None:
    for origin in (f"http://127.0.0.1:{http_server.port}", f"http://localhost:{http_server.port}"):
        resp = post(client, http_server.url, request("ping", id=1), headers={"Origin": origin})
        assert resp.status_code == 200, (origin, resp.status_code)
    assert post(client, http_server.url, request("ping", id=1)).status_code == 200


# ------------------------------------------------------------------ in-flight requests


def post_in_background(
    client: httpx.Client, url: str, body: Any, session: str
) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}

    def go() -> None:
        started = time.monotonic()
        try:
            out["resp"] = post(client, url, body, session=session)
        except httpx.HTTPError as exc:
            out["error"] = exc
        out["elapsed"] = time.monotonic() - started

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    return thread, out


def sleep_request(id: Any, ms: int = 1500) -> dict[str, Any]:
    return make_request("tools/call", {"name": "sleep", "arguments": {"ms": ms}}, id=id)


def test_cancelled_request_still_gets_a_json_reply(client: httpx.Client, http_url: str) -> None:
    # A POST that carries a request MUST be answered with application/json or an SSE stream
    # (Streamable HTTP); 202 is only for bodies of notifications and responses.
    session = open_session(client, http_url, "2025-03-26")
    thread, out = post_in_background(client, http_url, sleep_request("c1"), session)
    time.sleep(0.3)
    cancel = notification("notifications/cancelled", {"requestId": "c1", "reason": "test"})
    assert post(client, http_url, cancel, session=session).status_code == 202
    thread.join(5.0)
    resp = out["resp"]
    assert out["elapsed"] < 1.2, "the cancelled request ran to completion"
    assert resp.status_code == 200, (resp.status_code, resp.content)
    assert resp.headers["content-type"].startswith("application/json")
    body = resp.json()
    assert body["id"] == "c1" and "error" in body, body


def test_deleting_a_session_answers_its_in_flight_requests(
    client: httpx.Client, http_url: str
) -> None:
    session = open_session(client, http_url, "2025-03-26")
    thread, out = post_in_background(client, http_url, sleep_request("d1"), session)
    time.sleep(0.3)
    assert client.delete(http_url, headers={"Mcp-Session-Id": session}).status_code == 204
    thread.join(5.0)
    resp = out["resp"]
    assert out["elapsed"] < 1.2, "the ended session's request ran to completion"
    # Whatever the status, the client gets a JSON-RPC error, not an empty 500.
    assert resp.status_code < 500, (resp.status_code, resp.content)
    body = resp.json()
    assert "error" in body and body["id"] in ("d1", None), body
