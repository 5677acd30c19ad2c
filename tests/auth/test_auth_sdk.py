"""The official MCP Python SDK client's OAuth flow against a guarded ``jetmcp run``, end to
end, with a real authorization server on 127.0.0.1 (tests/oauth_server.py).

The SDK is given no token and no authorization server: it gets the 401, reads the
protected resource metadata it names, the authorization server's metadata, registers
itself (RFC 7591), goes through the authorization code flow with PKCE (the "user agent"
here follows the authorization URL with httpx and hands the code back), exchanges the
code for a token bound to this resource (RFC 8707 ``resource``), and retries. Then the
403 step-up: a token lacking a scope the server requires is traded for one that has it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx
import httpx2
import pytest
from mcp.client import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from harness.oauth_server import AuthorizationServer
from harness.servers import AppServer

APP = "tests.apps.auth_app:app"
CONVERSATION_TIMEOUT = 30.0
REDIRECT_URI = "http://127.0.0.1:9/callback"


@pytest.fixture(scope="module")
def auth() -> Iterator[AuthorizationServer]:
    with AuthorizationServer() as server:
        yield server


def guarded(auth: AuthorizationServer, *extra: str) -> AppServer:
    return AppServer(
        APP,
        "--auth-issuer",
        auth.issuer,
        "--auth-jwks-url",
        auth.jwks_url,
        *extra,
        label="guarded jetmcp server",
    )


class MemoryStorage:
    """The SDK's TokenStorage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class UserAgent:
    """Plays the browser: opens the authorization URL (the test server approves at once)
    and reads the code off the redirect."""

    def __init__(self) -> None:
        self.opened: list[str] = []
        self._result: AuthorizationCodeResult | None = None

    async def redirect(self, url: str) -> None:
        self.opened.append(url)
        async with httpx2.AsyncClient(timeout=10.0) as browser:
            resp = await browser.get(url, follow_redirects=False)
        assert resp.status_code == 302, resp.text
        query = parse_qs(urlsplit(resp.headers["location"]).query)
        self._result = AuthorizationCodeResult(code=query["code"][0], state=query["state"][0])

    async def callback(self) -> AuthorizationCodeResult:
        assert self._result is not None
        return self._result


def provider(url: str, storage: MemoryStorage, agent: UserAgent) -> OAuthClientProvider:
    return OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="jetmcp-tests",
            redirect_uris=[REDIRECT_URI],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="client_secret_post",
        ),
        storage=storage,
        redirect_handler=agent.redirect,
        callback_handler=agent.callback,
    )


class Recorder:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, int]] = []

    async def on_response(self, response: httpx2.Response) -> None:
        self.seen.append((response.request.method, str(response.request.url), response.status_code))


def run(main: Callable[[], Awaitable[None]]) -> None:
    async def bounded() -> None:
        with anyio.fail_after(CONVERSATION_TIMEOUT):
            await main()

    anyio.run(bounded)


async def converse(
    url: str, auth_flow: OAuthClientProvider, recorder: Recorder, mode: str
) -> dict[str, Any]:
    async with (
        httpx2.AsyncClient(
            auth=auth_flow,
            timeout=httpx2.Timeout(10.0),
            event_hooks={"response": [recorder.on_response]},
        ) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        tools = await client.list_tools()
        assert "whoami" in {t.name for t in tools.tools}
        who = await client.call_tool("whoami", {})
        assert not who.is_error
        assert isinstance(who.structured_content, dict)
        return who.structured_content


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_sdk_client_oauth_flow_end_to_end(auth: AuthorizationServer, mode: str) -> None:
    server = guarded(auth)
    try:
        storage, agent, recorder = MemoryStorage(), UserAgent(), Recorder()
        found: dict[str, Any] = {}

        async def main() -> None:
            found.update(
                await converse(server.url, provider(server.url, storage, agent), recorder, mode)
            )

        run(main)
    finally:
        server.stop()
    # The first request was refused, the metadata read, the token fetched, the request retried.
    first = recorder.seen[0]
    assert (first[1], first[2]) == (server.url, 401), recorder.seen
    urls = [u for _, u, _ in recorder.seen]
    assert f"{server.base}/.well-known/oauth-protected-resource/mcp" in urls
    assert any(u.startswith(auth.issuer + "/.well-known/") for u in urls)
    assert f"{auth.issuer}/register" in urls and f"{auth.issuer}/token" in urls
    assert any(u == server.url and status == 200 for _, u, status in recorder.seen)
    # The token was asked for this resource (RFC 8707), and the server saw who got it.
    assert auth.token_requests[-1]["resource"] == server.url
    assert len(agent.opened) == 1 and "resource=" in agent.opened[0]
    assert storage.client is not None and storage.tokens is not None
    assert found["subject"] == f"user-of-{storage.client.client_id}"
    assert found["aud"] == server.url


def test_sdk_client_steps_up_on_insufficient_scope(auth: AuthorizationServer) -> None:
    server = guarded(auth, "--auth-required-scopes", "mcp,files:read")
    try:
        # A client registered earlier, holding a token without files:read.
        registered = httpx.post(
            f"{auth.issuer}/register",
            json={
                "redirect_uris": [REDIRECT_URI],
                "token_endpoint_auth_method": "client_secret_post",
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "client_name": "jetmcp-tests",
            },
            timeout=10,
        ).json()
        storage, agent, recorder = MemoryStorage(), UserAgent(), Recorder()
        storage.client = OAuthClientInformationFull.model_validate(
            {**registered, "issuer": auth.issuer}
        )
        narrow = auth.mint(
            server.url, scope="mcp", client_id=registered["client_id"], subject="frank"
        )
        storage.tokens = OAuthToken(
            access_token=narrow, token_type="Bearer", expires_in=600, scope="mcp"
        )
        found: dict[str, Any] = {}

        async def main() -> None:
            found.update(
                await converse(server.url, provider(server.url, storage, agent), recorder, "legacy")
            )

        run(main)
    finally:
        server.stop()
    statuses = [s for _, u, s in recorder.seen if u == server.url]
    assert statuses[0] == 403, recorder.seen
    assert storage.tokens is not None and storage.tokens.access_token != narrow
    # It asked for what the 403 named, keeping what it had.
    assert set(parse_qs(urlsplit(agent.opened[0]).query)["scope"][0].split()) >= {
        "mcp",
        "files:read",
    }
    assert found["scopes"] == ["files:read", "mcp"]
    assert found["aud"] == server.url
