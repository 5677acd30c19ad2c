"""An official SDK server (mcp 2.x ``MCPServer``) set up as an OAuth resource server the SDK
way: ``auth=AuthSettings(...)`` and a ``token_verifier`` of its own. jetmcp serves it with
that auth (tests/auth/test_auth_compat.py). The issuer comes from ``AUTH_TEST_ISSUER``; the
resource URL is the one ``jetmcp run`` serves (its exported settings)."""

from __future__ import annotations

import os

import jwt
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer

from jetmcp.settings import Settings

ISSUER = os.environ.get("AUTH_TEST_ISSUER", "http://127.0.0.1:1")
_settings = Settings.from_env()
RESOURCE = f"http://{_settings.host}:{_settings.port}{_settings.path}"


class JwksVerifier:
    """What an SDK user writes: PyJWT against the issuer's JWKS."""

    def __init__(self) -> None:
        self.keys = jwt.PyJWKClient(f"{ISSUER}/jwks")

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            key = self.keys.get_signing_key_from_jwt(token)
            claims = jwt.decode(token, key, algorithms=["RS256"], issuer=ISSUER, audience=RESOURCE)
        except jwt.PyJWTError:
            return None
        return AccessToken(
            token=token,
            client_id=claims.get("client_id", ""),
            scopes=str(claims.get("scope", "")).split(),
            expires_at=claims["exp"],
            subject=claims.get("sub"),
            resource=RESOURCE,
            claims=claims,
        )


mcp = MCPServer(
    "sdk-auth",
    token_verifier=JwksVerifier(),
    auth=AuthSettings(
        issuer_url=ISSUER,  # type: ignore[arg-type]
        resource_server_url=RESOURCE,  # type: ignore[arg-type]
        required_scopes=["mcp"],
        validate_token_resource=True,
    ),
)


@mcp.tool()
def hello(name: str) -> str:
    """Greet"""
    return f"hi {name}"
