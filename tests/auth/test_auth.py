"""A ``jetmcp run`` process guarded by OAuth (the ``--auth-*`` flags), driven over real HTTP
with tokens signed by a real authorization server on 127.0.0.1 (tests/oauth_server.py).

What it proves: the protected resource metadata; 401/400/403 with the right
``WWW-Authenticate`` on every MCP path (POST/GET/DELETE, the legacy /sse and /messages); the
handler sees the principal; sessions, /sse streams and tasks answer another principal as if
they did not exist; 2026-07-28 requests carry their token; components a principal may not
use are hidden and answered like unknown ones; opaque tokens through introspection.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from harness.messages import (
    assert_error,
    assert_result,
    initialize_request,
    json_headers,
    modern_headers,
    modern_meta,
    modern_request,
    modern_routing,
    notification,
    request,
    tool_text,
)
from harness.oauth_server import AuthorizationServer
from harness.redis_support import Hosts, drop_keys
from harness.servers import AppServer

APP = "tests.apps.auth_app:app"
HOOKED = "tests.apps.auth_app:hooked"
LEGACY = "2025-11-25"
TASKS_EXT = "io.modelcontextprotocol/tasks"


@pytest.fixture(scope="module")
def auth() -> Iterator[AuthorizationServer]:
    with AuthorizationServer() as server:
        yield server


def guarded_server(auth: AuthorizationServer, app: str, *extra: str) -> AppServer:
    return AppServer(
        app,
        "--auth-issuer",
        auth.issuer,
        "--auth-jwks-url",
        auth.jwks_url,
        "--auth-jwks-cooldown-seconds",
        "0",
        *extra,
        label="guarded jetmcp server",
    )


@pytest.fixture(scope="module")
def server(auth: AuthorizationServer) -> Iterator[AppServer]:
    srv = guarded_server(auth, APP)
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def hooked(auth: AuthorizationServer) -> Iterator[AppServer]:
    srv = guarded_server(auth, HOOKED)
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10.0) as client:
        yield client


def bearer(token: str, **headers: str) -> dict[str, str]:
    return {**json_headers(LEGACY), "Authorization": f"Bearer {token}", **headers}


def call(
    http: httpx.Client, url: str, token: str, method: str, params: dict[str, Any] | None = None
) -> dict[str, Any]:
    msg = request(method, params)
    resp = http.post(url, json=msg, headers=bearer(token))
    assert resp.status_code == 200, (resp.status_code, resp.text)
    body: dict[str, Any] = resp.json()
    assert body["id"] == msg["id"]
    return body


def challenge(resp: httpx.Response) -> str:
    return resp.headers.get("www-authenticate", "")


# --------------------------------------------------------------------------- discovery, 401


def test_protected_resource_metadata(
    http: httpx.Client, server: AppServer, auth: AuthorizationServer
) -> None:
    for path in (
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ):
        resp = http.get(server.base + path)
        assert resp.status_code == 200, resp.text
        assert resp.headers["content-type"] == "application/json"
        doc = resp.json()
        assert doc["resource"] == server.url
        assert doc["authorization_servers"] == [auth.issuer]
        assert doc["bearer_methods_supported"] == ["header"]
        assert {"admin", "files:read", "files:write"} <= set(doc["scopes_supported"])
    assert http.head(server.base + "/.well-known/oauth-protected-resource").status_code == 200
    resp = http.post(server.base + "/.well-known/oauth-protected-resource", content=b"{}")
    assert resp.status_code == 405


def test_every_mcp_path_needs_a_token(http: httpx.Client, server: AppServer) -> None:
    metadata = f'resource_metadata="{server.base}/.well-known/oauth-protected-resource/mcp"'
    body = json.dumps(request("tools/list")).encode()
    attempts = [
        http.post(server.url, content=body, headers=json_headers(LEGACY)),
        http.get(server.url, headers={"Accept": "text/event-stream", "Mcp-Session-Id": "x"}),
        http.delete(server.url, headers={"Mcp-Session-Id": "x"}),
        http.get(server.base + "/sse", headers={"Accept": "text/event-stream"}),
        http.post(server.base + "/messages?session_id=x", content=body, headers=json_headers()),
        # A token in the query string is not a way in (OAuth 2.1).
        http.post(f"{server.url}?access_token=abc", content=body, headers=json_headers(LEGACY)),
    ]
    for resp in attempts:
        assert resp.status_code == 401, (resp.request.method, resp.request.url, resp.text)
        assert challenge(resp).startswith("Bearer "), challenge(resp)
        assert metadata in challenge(resp)
        assert "error=" not in challenge(resp)
        assert resp.json()["error"]["code"] == -32600
    # Anything else is no MCP path: no challenge, as before.
    assert http.get(server.base + "/elsewhere").status_code == 404


def test_refused_tokens_get_invalid_token(
    http: httpx.Client, server: AppServer, auth: AuthorizationServer
) -> None:
    body = json.dumps(request("tools/list")).encode()
    cases = {
        "has expired": auth.mint(server.url, lifetime=-300),
        "not issued for this resource": auth.mint("http://127.0.0.1:1/mcp"),
        "another issuer": auth.mint(server.url, issuer="http://127.0.0.1:1"),
        "not a JWT": "opaque-but-no-introspection",
    }
    for why, token in cases.items():
        resp = http.post(server.url, content=body, headers=bearer(token))
        assert resp.status_code == 401, (why, resp.text)
        assert 'error="invalid_token"' in challenge(resp), challenge(resp)
        assert why in challenge(resp) and "resource_metadata=" in challenge(resp)
        assert resp.json()["error"]["data"]["error"] == "invalid_token"
    resp = http.post(server.url, content=body, headers=bearer("two words"))
    assert resp.status_code == 400 and 'error="invalid_request"' in challenge(resp)
    resp = http.post(
        server.url, content=body, headers={**json_headers(LEGACY), "Authorization": "Basic YTpi"}
    )
    assert resp.status_code == 401 and "error=" not in challenge(resp)
    token = auth.mint(server.url)
    raw = [
        *json_headers(LEGACY).items(),
        ("Authorization", f"Bearer {token}"),
        ("Authorization", f"Bearer {token}"),
    ]
    resp = http.post(server.url, content=body, headers=raw)
    assert resp.status_code == 400 and "more than one" in challenge(resp)


def test_the_handler_sees_the_principal(
    http: httpx.Client, server: AppServer, auth: AuthorizationServer
) -> None:
    token = auth.mint(server.url, subject="alice", scope="mcp files:read")
    body = call(http, server.url, token, "tools/call", {"name": "whoami", "arguments": {}})
    who = assert_result(body, body["id"])["structuredContent"]
    assert who["subject"] == "alice"
    assert who["client_id"] == "test-client"
    assert who["issuer"] == auth.issuer
    assert who["scopes"] == ["files:read", "mcp"]
    assert who["aud"] == server.url
    # The repr a handler might log names the principal, never its token or claims.
    assert token not in who["principal"] and "alice" in who["principal"]
    assert "jti" not in who["principal"]
    # A plain tool (the extension's fast path) is served under auth as well.
    added = call(
        http, server.url, token, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}
    )
    assert tool_text(assert_result(added, added["id"])) == "5"


def test_a_rotated_key_is_picked_up_by_the_server(
    http: httpx.Client, server: AppServer, auth: AuthorizationServer
) -> None:
    old = auth.mint(server.url)
    assert call(http, server.url, old, "tools/list")["result"]["tools"]
    new_key = auth.rotate("k-http-rotated")
    try:
        fresh = auth.mint(server.url, key=new_key, subject="rotated")
        body = call(http, server.url, fresh, "tools/call", {"name": "whoami", "arguments": {}})
        assert body["result"]["structuredContent"]["subject"] == "rotated"
    finally:
        auth.keys = auth.keys[:-1]


# --------------------------------------------------------------------------- principal-bound state


def open_session(http: httpx.Client, url: str, token: str) -> str:
    resp = http.post(url, json=initialize_request(LEGACY), headers=bearer(token))
    assert resp.status_code == 200, resp.text
    session = resp.headers["mcp-session-id"]
    done = http.post(
        url,
        json=notification("notifications/initialized"),
        headers=bearer(token, **{"Mcp-Session-Id": session}),
    )
    assert done.status_code == 202, done.text
    return session


def test_a_session_is_bound_to_its_principal(
    http: httpx.Client, server: AppServer, auth: AuthorizationServer
) -> None:
    alice = auth.mint(server.url, subject="alice")
    bob = auth.mint(server.url, subject="bob")
    alice_app = auth.mint(server.url, subject="alice", client_id="another-app")
    session = open_session(http, server.url, alice)
    with_session = {"Mcp-Session-Id": session}
    for intruder in (bob, alice_app):
        post = http.post(
            server.url, json=request("tools/list"), headers=bearer(intruder, **with_session)
        )
        assert post.status_code == 404, post.text
        assert post.json()["error"]["message"] == "Session not found"
        get = http.get(
            server.url, headers={**bearer(intruder, **with_session), "Accept": "text/event-stream"}
        )
        assert get.status_code == 404
        delete = http.delete(server.url, headers=bearer(intruder, **with_session))
        assert delete.status_code == 404
        # Resuming one of its streams is no way in either.
        resume = http.get(
            server.url,
            headers={
                **bearer(intruder, **with_session),
                "Accept": "text/event-stream",
                "Last-Event-ID": "s0-1",
            },
        )
        assert resume.status_code == 404
    # A session nobody has is the same 404: nothing tells the two apart.
    unknown = http.post(
        server.url, json=request("tools/list"), headers=bearer(bob, **{"Mcp-Session-Id": "nope"})
    )
    assert unknown.status_code == 404 and unknown.json()["error"] == post.json()["error"]
    # Its owner carries on: a fresh token of the same principal included.
    again = auth.mint(server.url, subject="alice", scope="mcp files:read")
    for token in (alice, again):
        ok = http.post(
            server.url, json=request("tools/list"), headers=bearer(token, **with_session)
        )
        assert ok.status_code == 200, ok.text
    assert http.delete(server.url, headers=bearer(alice, **with_session)).status_code == 204


def test_a_legacy_sse_stream_is_bound_to_its_principal(
    http: httpx.Client, server: AppServer, auth: AuthorizationServer
) -> None:
    alice = auth.mint(server.url, subject="alice")
    bob = auth.mint(server.url, subject="bob")
    events: queue.Queue[str] = queue.Queue()
    stop = threading.Event()

    def read() -> None:
        with (
            httpx.Client(timeout=10.0) as own,
            own.stream(
                "GET",
                server.base + "/sse",
                headers={"Accept": "text/event-stream", "Authorization": f"Bearer {alice}"},
            ) as resp,
        ):
            assert resp.status_code == 200
            for line in resp.iter_lines():
                if line.startswith("data:"):
                    events.put(line[5:].strip())
                if stop.is_set():
                    return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    endpoint = events.get(timeout=10)
    assert endpoint.startswith("/messages?session_id=")
    url = server.base + endpoint
    init = json.dumps(initialize_request("2024-11-05")).encode()
    stolen = http.post(url, content=init, headers=bearer(bob))
    assert stolen.status_code == 404, stolen.text
    assert http.post(url, content=init, headers=bearer(alice)).status_code == 202
    reply = json.loads(events.get(timeout=10))
    assert reply["result"]["protocolVersion"] == "2024-11-05"
    stop.set()


def task_id(body: dict[str, Any]) -> str:
    value: str = assert_result(body, body["id"])["task"]["taskId"]
    return value


def test_session_less_tasks_are_bound_to_their_principal(
    http: httpx.Client, server: AppServer, auth: AuthorizationServer
) -> None:
    alice = auth.mint(server.url, subject="alice")
    bob = auth.mint(server.url, subject="bob")
    started = call(
        http, server.url, alice, "tools/call", {"name": "slow", "arguments": {"ms": 10}, "task": {}}
    )
    tid = task_id(started)
    for method in ("tasks/get", "tasks/result", "tasks/cancel"):
        body = call(http, server.url, bob, method, {"taskId": tid})
        assert_error(body, -32602, body["id"])
        assert "not found" in body["error"]["message"].lower()
    seen = call(http, server.url, alice, "tasks/get", {"taskId": tid})
    assert assert_result(seen, seen["id"])["taskId"] == tid
    result = call(http, server.url, alice, "tasks/result", {"taskId": tid})
    assert tool_text(assert_result(result, result["id"])) == "slept 10"


def test_a_sessions_tasks_are_its_principals(
    http: httpx.Client, server: AppServer, auth: AuthorizationServer
) -> None:
    alice = auth.mint(server.url, subject="alice")
    bob = auth.mint(server.url, subject="bob")
    session = open_session(http, server.url, alice)
    msg = request("tools/call", {"name": "slow", "arguments": {"ms": 10}, "task": {}})
    resp = http.post(server.url, json=msg, headers=bearer(alice, **{"Mcp-Session-Id": session}))
    tid = task_id(resp.json())
    # Bob cannot reach the session, and outside it the task does not exist for him.
    resp = http.post(
        server.url,
        json=request("tasks/get", {"taskId": tid}),
        headers=bearer(bob, **{"Mcp-Session-Id": session}),
    )
    assert resp.status_code == 404
    body = call(http, server.url, bob, "tasks/get", {"taskId": tid})
    assert_error(body, -32602, body["id"])


def modern_post(
    http: httpx.Client, url: str, token: str | None, body: dict[str, Any]
) -> httpx.Response:
    headers = {**modern_headers(), **modern_routing(body)}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return http.post(url, json=body, headers=headers)


def test_2026_requests_carry_their_token(
    http: httpx.Client, server: AppServer, auth: AuthorizationServer
) -> None:
    msg = modern_request("tools/call", {"name": "whoami", "arguments": {}})
    assert modern_post(http, server.url, None, msg).status_code == 401
    resp = modern_post(http, server.url, auth.mint(server.url, subject="dora"), msg)
    assert resp.status_code == 200, resp.text
    assert resp.json()["result"]["structuredContent"]["subject"] == "dora"


def test_2026_tasks_are_bound_to_their_principal(
    http: httpx.Client, server: AppServer, auth: AuthorizationServer
) -> None:
    meta = modern_meta(capabilities={"extensions": {TASKS_EXT: {}}})
    alice = auth.mint(server.url, subject="alice")
    bob = auth.mint(server.url, subject="bob")
    started = modern_post(
        http,
        server.url,
        alice,
        modern_request("tools/call", {"name": "slow", "arguments": {"ms": 10}}, meta=meta),
    )
    assert started.status_code == 200, started.text
    tid = started.json()["result"]["taskId"]
    theirs = modern_post(
        http, server.url, bob, modern_request("tasks/get", {"taskId": tid}, meta=meta)
    )
    assert theirs.json()["error"]["code"] == -32602, theirs.text
    cancel = modern_post(
        http, server.url, bob, modern_request("tasks/cancel", {"taskId": tid}, meta=meta)
    )
    assert cancel.json()["error"]["code"] == -32602
    deadline = time.monotonic() + 10
    while True:
        mine = modern_post(
            http, server.url, alice, modern_request("tasks/get", {"taskId": tid}, meta=meta)
        )
        assert mine.status_code == 200, mine.text
        if mine.json()["result"]["status"] == "completed" or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert mine.json()["result"]["status"] == "completed"


def test_2026_request_state_is_bound_to_its_principal(
    http: httpx.Client, server: AppServer, auth: AuthorizationServer
) -> None:
    """An input round's sealed requestState works for the principal it was minted for
    only: another one replaying it (with answers of their own) is refused."""
    meta = modern_meta(capabilities={"elicitation": {}})
    alice = auth.mint(server.url, subject="alice")
    bob = auth.mint(server.url, subject="bob")
    params = {"name": "ask_name", "arguments": {}}
    first = modern_post(http, server.url, alice, modern_request("tools/call", params, meta=meta))
    state = first.json()["result"]["requestState"]
    answer = {"user_name": {"action": "accept", "content": {"name": "Bob"}}}
    retry = {**params, "inputResponses": answer, "requestState": state}
    stolen = modern_post(http, server.url, bob, modern_request("tools/call", retry, meta=meta))
    assert stolen.json()["error"]["code"] == -32602, stolen.text
    own = modern_post(http, server.url, alice, modern_request("tools/call", retry, meta=meta))
    assert tool_text(own.json()["result"]) == "Hello, Bob!"


# ----------------------------------------------------------------- scopes, hidden components


def names(body: dict[str, Any], field: str, key: str = "name") -> set[str]:
    return {item[key] for item in assert_result(body, body["id"])[field]}


def test_components_needing_scopes_are_hidden_without_them(
    http: httpx.Client, server: AppServer, auth: AuthorizationServer
) -> None:
    plain = auth.mint(server.url, scope="mcp")
    admin = auth.mint(server.url, scope="mcp admin files:read files:write")
    listed = names(call(http, server.url, plain, "tools/list"), "tools")
    assert "admin_reset" not in listed and "write_file" not in listed and "add" in listed
    assert {"admin_reset", "write_file"} <= names(
        call(http, server.url, admin, "tools/list"), "tools"
    )
    assert "admin://config" not in names(
        call(http, server.url, plain, "resources/list"), "resources", "uri"
    )
    assert "admin://config" in names(
        call(http, server.url, admin, "resources/list"), "resources", "uri"
    )
    templates = call(http, server.url, plain, "resources/templates/list")
    assert "files://{name}" not in names(templates, "resourceTemplates", "uriTemplate")
    templates = call(http, server.url, admin, "resources/templates/list")
    assert "files://{name}" in names(templates, "resourceTemplates", "uriTemplate")
    assert "admin_prompt" not in names(call(http, server.url, plain, "prompts/list"), "prompts")
    assert "admin_prompt" in names(call(http, server.url, admin, "prompts/list"), "prompts")

    def same_as_unknown(
        method: str, hidden: dict[str, Any], unknown: dict[str, Any], text: str
    ) -> None:
        got = call(http, server.url, plain, method, hidden)["error"]
        missing = call(http, server.url, plain, method, unknown)["error"]
        assert got["code"] == missing["code"]
        assert got["message"] == missing["message"].replace(text[1], text[0])
        assert got.get("data") == (
            None
            if missing.get("data") is None
            else json.loads(json.dumps(missing["data"]).replace(text[1], text[0]))
        )

    same_as_unknown(
        "tools/call", {"name": "admin_reset"}, {"name": "no_such"}, ("admin_reset", "no_such")
    )
    same_as_unknown(
        "resources/read",
        {"uri": "admin://config"},
        {"uri": "admin://nothing"},
        ("admin://config", "admin://nothing"),
    )
    same_as_unknown(
        "resources/read", {"uri": "files://a"}, {"uri": "nofiles://a"}, ("files://a", "nofiles://a")
    )
    same_as_unknown(
        "prompts/get",
        {"name": "admin_prompt"},
        {"name": "no_prompt"},
        ("admin_prompt", "no_prompt"),
    )
    ok = call(http, server.url, admin, "tools/call", {"name": "admin_reset", "arguments": {}})
    assert tool_text(assert_result(ok, ok["id"])) == "reset"
    read = call(http, server.url, admin, "resources/read", {"uri": "files://a"})
    assert assert_result(read, read["id"])["contents"][0]["text"] == "file a"


def test_an_authorize_hook_hides_what_it_refuses(
    http: httpx.Client, hooked: AppServer, auth: AuthorizationServer
) -> None:
    alice = auth.mint(hooked.url, subject="alice")
    bob = auth.mint(hooked.url, subject="bob")
    assert "secret_plan" in names(call(http, hooked.url, alice, "tools/list"), "tools")
    assert "secret_plan" not in names(call(http, hooked.url, bob, "tools/list"), "tools")
    hidden = call(http, hooked.url, bob, "tools/call", {"name": "secret_plan", "arguments": {}})
    assert hidden["error"] == {"code": -32602, "message": "Unknown tool: secret_plan"}
    shown = call(http, hooked.url, alice, "tools/call", {"name": "secret_plan", "arguments": {}})
    assert tool_text(assert_result(shown, shown["id"])) == "the plan"
    templates = call(http, hooked.url, bob, "resources/templates/list")
    assert "vault://{item}" not in names(templates, "resourceTemplates", "uriTemplate")
    body = call(http, hooked.url, bob, "resources/read", {"uri": "vault://gold"})
    assert body["error"]["message"] == "Resource not found: vault://gold"
    body = call(http, hooked.url, alice, "resources/read", {"uri": "vault://gold"})
    assert assert_result(body, body["id"])["contents"][0]["text"] == "vault gold"
    assert "private_note" not in names(call(http, hooked.url, bob, "prompts/list"), "prompts")
    body = call(
        http,
        hooked.url,
        bob,
        "completion/complete",
        {
            "ref": {"type": "ref/prompt", "name": "private_note"},
            "argument": {"name": "x", "value": ""},
        },
    )
    assert body["error"]["message"] == "Unknown prompt: private_note"
    # A batch (2025-03-26) is filtered entry by entry.
    batch = [
        request("tools/call", {"name": "secret_plan", "arguments": {}}),
        request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}}),
    ]
    resp = http.post(
        hooked.url, json=batch, headers=bearer(bob, **{"MCP-Protocol-Version": "2025-03-26"})
    )
    replies = {r["id"]: r for r in resp.json()}
    assert replies[batch[0]["id"]]["error"]["message"] == "Unknown tool: secret_plan"
    assert tool_text(replies[batch[1]["id"]]["result"]) == "2"


def test_required_scopes_ask_for_a_step_up(http: httpx.Client, auth: AuthorizationServer) -> None:
    srv = guarded_server(auth, APP, "--auth-required-scopes", "mcp,files:read")
    try:
        body = json.dumps(request("tools/list")).encode()
        resp = http.post(srv.url, content=body, headers=json_headers(LEGACY))
        assert resp.status_code == 401
        assert 'scope="files:read mcp"' in challenge(resp)
        resp = http.post(srv.url, content=body, headers=bearer(auth.mint(srv.url, scope="mcp")))
        assert resp.status_code == 403, resp.text
        assert 'error="insufficient_scope"' in challenge(resp)
        assert 'scope="files:read mcp"' in challenge(resp)
        assert (
            f'resource_metadata="{srv.base}/.well-known/oauth-protected-resource/mcp"'
            in challenge(resp)
        )
        assert resp.json()["error"]["data"] == {
            "error": "insufficient_scope",
            "scope": "files:read mcp",
        }
        doc = http.get(srv.base + "/.well-known/oauth-protected-resource").json()
        assert {"mcp", "files:read"} <= set(doc["scopes_supported"])
        ok = http.post(
            srv.url, content=body, headers=bearer(auth.mint(srv.url, scope="mcp files:read"))
        )
        assert ok.status_code == 200, ok.text
    finally:
        srv.stop()


def test_opaque_tokens_through_introspection(http: httpx.Client, auth: AuthorizationServer) -> None:
    client_id, secret = auth.introspection_client
    saved = {k: os.environ.get(k) for k in ("JETMCP_AUTH_CLIENT_ID", "JETMCP_AUTH_CLIENT_SECRET")}
    os.environ["JETMCP_AUTH_CLIENT_ID"] = client_id
    os.environ["JETMCP_AUTH_CLIENT_SECRET"] = secret
    try:
        srv = AppServer(
            APP,
            "--auth-introspection-url",
            auth.introspection_url,
            "--authorization-server",
            auth.issuer,
            label="introspecting jetmcp server",
        )
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    try:
        token = auth.mint_opaque(srv.url, sub="erin")
        before = auth.hits["/introspect"]
        for _ in range(3):
            body = call(http, srv.url, token, "tools/call", {"name": "whoami", "arguments": {}})
            assert body["result"]["structuredContent"]["subject"] == "erin"
        assert auth.hits["/introspect"] - before == 1  # cached by the token's digest
        body = json.dumps(request("tools/list")).encode()
        for bad in (
            auth.mint_opaque(srv.url, active=False),
            auth.mint_opaque("http://127.0.0.1:1/mcp"),
        ):
            resp = http.post(srv.url, content=body, headers=bearer(bad))
            assert resp.status_code == 401 and 'error="invalid_token"' in challenge(resp)
        doc = http.get(srv.base + "/.well-known/oauth-protected-resource/mcp").json()
        assert doc["authorization_servers"] == [auth.issuer]
    finally:
        srv.stop()


def test_an_unreachable_authorization_server_is_a_503(
    http: httpx.Client, auth: AuthorizationServer
) -> None:
    srv = AppServer(
        APP,
        "--auth-issuer",
        auth.issuer,
        "--auth-jwks-url",
        "http://127.0.0.1:1/jwks",
        label="jetmcp without its AS",
    )
    try:
        resp = http.post(srv.url, json=request("tools/list"), headers=bearer(auth.mint(srv.url)))
        assert resp.status_code == 503, resp.text
        assert resp.headers["retry-after"]
        assert resp.json()["error"]["code"] == -32000
    finally:
        srv.stop()


# --------------------------------------------------------------------------- the command line


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--auth-jwks-url", "http://127.0.0.1:1/jwks"], "needs --auth-issuer"),
        (["--auth-issuer", "http://127.0.0.1:1", "--host", "0.0.0.0"], "--public-url"),
        (["--auth-issuer", "http://127.0.0.1:1", "--auth-algorithms", "HS256"], "asymmetric"),
        (
            [
                "--auth-jwks-url",
                "http://127.0.0.1:1/jwks",
                "--auth-introspection-url",
                "http://127.0.0.1:1/i",
                "--auth-issuer",
                "http://127.0.0.1:1",
            ],
            "not both",
        ),
        (["--transport", "stdio", "--auth-issuer", "http://127.0.0.1:1"], "HTTP only"),
        (["--metrics-path", "/mcp"], "is an MCP path"),
    ],
)
def test_auth_settings_that_cannot_work_are_refused_at_start(flags: list[str], says: str) -> None:
    import subprocess

    from harness.servers import ROOT, free_port, jetmcp_command, server_env

    done = subprocess.run(
        [*jetmcp_command(), "run", APP, "--transport", "http", "--port", str(free_port()), *flags],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=server_env(),
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr.decode()
    assert says in done.stderr.decode()
    assert "Traceback" not in done.stderr.decode()


# --------------------------------------------------------------------------- shared state


def test_principals_bind_sessions_and_tasks_across_hosts(
    http: httpx.Client, auth: AuthorizationServer
) -> None:
    """Two hosts on one Redis: the principal a session and a session-less task belong to
    travels with them, so another principal is refused on the host that did not create them
    too, and their owner is served there."""
    audience = "https://mcp.example/mcp"
    hosts = Hosts(
        APP,
        "--auth-issuer",
        auth.issuer,
        "--auth-jwks-url",
        auth.jwks_url,
        "--auth-audience",
        audience,
    )
    try:
        first, second = hosts.urls
        alice = auth.mint(audience, subject="alice")
        bob = auth.mint(audience, subject="bob")
        session = open_session(http, first, alice)
        with_session = {"Mcp-Session-Id": session}
        refused = http.post(second, json=request("tools/list"), headers=bearer(bob, **with_session))
        assert refused.status_code == 404, refused.text
        served = http.post(
            second, json=request("tools/list"), headers=bearer(alice, **with_session)
        )
        assert served.status_code == 200, served.text
        assert "tools" in served.json()["result"]

        started = call(
            http, first, alice, "tools/call", {"name": "slow", "arguments": {"ms": 10}, "task": {}}
        )
        tid = task_id(started)
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            body = call(http, second, bob, method, {"taskId": tid})
            assert_error(body, -32602, body["id"])
        listed = call(http, second, bob, "tasks/list")
        assert tid not in json.dumps(listed)
        result = call(http, second, alice, "tasks/result", {"taskId": tid})
        assert tool_text(assert_result(result, result["id"])) == "slept 10"
        assert http.delete(second, headers=bearer(alice, **with_session)).status_code == 204
    finally:
        hosts.stop()
        drop_keys(hosts.prefix)
