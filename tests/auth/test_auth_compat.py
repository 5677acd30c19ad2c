"""An official SDK server configured with ``auth=AuthSettings(...)`` and a
``token_verifier``, served by ``jetmcp run`` unchanged: the SDK's own verifier checks the
tokens, its required scopes and resource URL hold, its issuer is the one advertised."""

from __future__ import annotations

import os
from collections.abc import Iterator

import httpx
import pytest

from harness.messages import json_headers, request, tool_text
from harness.oauth_server import AuthorizationServer
from harness.servers import AppServer

APP = "tests.apps.sdk_auth_app:mcp"


@pytest.fixture(scope="module")
def auth() -> Iterator[AuthorizationServer]:
    with AuthorizationServer() as server:
        yield server


@pytest.fixture(scope="module")
def server(auth: AuthorizationServer) -> Iterator[AppServer]:
    os.environ["AUTH_TEST_ISSUER"] = auth.issuer
    try:
        srv = AppServer(APP, label="SDK server with auth")
    finally:
        del os.environ["AUTH_TEST_ISSUER"]
    try:
        yield srv
    finally:
        srv.stop()


def post(srv: AppServer, token: str | None, name: str = "hello") -> httpx.Response:
    headers = json_headers("2025-11-25")
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    body = request("tools/call", {"name": name, "arguments": {"name": "sdk"}})
    return httpx.post(srv.url, json=body, headers=headers, timeout=10)


def test_an_sdk_server_keeps_its_auth(server: AppServer, auth: AuthorizationServer) -> None:
    resp = post(server, None)
    assert resp.status_code == 401
    assert 'scope="mcp"' in resp.headers["www-authenticate"]
    doc = httpx.get(f"{server.base}/.well-known/oauth-protected-resource/mcp", timeout=10).json()
    assert doc["resource"] == server.url
    assert [s.rstrip("/") for s in doc["authorization_servers"]] == [auth.issuer]
    ok = post(server, auth.mint(server.url, scope="mcp"))
    assert ok.status_code == 200, ok.text
    assert tool_text(ok.json()["result"]) == "hi sdk"
    # Its required scopes...
    assert post(server, auth.mint(server.url, scope="other")).status_code == 403
    # ...and its verifier's judgement (here: a token for another resource).
    other = post(server, auth.mint("http://127.0.0.1:1/mcp", scope="mcp"))
    assert other.status_code == 401
    assert 'error="invalid_token"' in other.headers["www-authenticate"]


def test_an_sdk_authorization_server_is_still_refused() -> None:
    from jetmcp.compat import adapt
    from jetmcp.run.loader import LoadError

    class Provider:  # what the SDK calls an OAuthAuthorizationServerProvider
        async def load_access_token(self, token: str) -> None:
            return None

    from mcp.server.auth.settings import AuthSettings
    from mcp.server.mcpserver import MCPServer

    sdk = MCPServer(
        "as",
        auth_server_provider=Provider(),  # type: ignore[arg-type]
        auth=AuthSettings(
            issuer_url="http://127.0.0.1:1",  # type: ignore[arg-type]
            resource_server_url="http://127.0.0.1:2/mcp",  # type: ignore[arg-type]
            validate_token_resource=True,
        ),
    )
    with pytest.raises(LoadError, match="authorization server"):
        adapt(sdk)
