"""Opaque access tokens, checked by asking the authorization server (RFC 7662).

The token is POSTed to the introspection endpoint with this resource server's own client
credentials (HTTP Basic, from ``JETMCP_AUTH_CLIENT_ID`` / ``JETMCP_AUTH_CLIENT_SECRET``).
An answer counts only when ``active`` is true, its ``exp``/``nbf`` hold (with the clock
skew), its ``iss`` is the configured issuer (when one is), and its ``aud`` names this
resource (RFC 8707: a token issued for another resource is refused, with or without an
``aud``). What the answers are kept for is the business of the bearer guard's cache.
"""

from __future__ import annotations

import base64
import os
import time
from typing import Any
from urllib.parse import quote

from jetmcp.auth.fetch import Fetcher
from jetmcp.auth.jwt import malformed_claim, principal_from_claims
from jetmcp.core.principal import AuthUnavailable, InvalidToken, Principal

#: The environment variables holding the resource server's client credentials.
CLIENT_ID_ENV = "JETMCP_AUTH_CLIENT_ID"
CLIENT_SECRET_ENV = "JETMCP_AUTH_CLIENT_SECRET"


class IntrospectionVerifier:
    """A :class:`~jetmcp.auth.TokenVerifier` for opaque tokens (see the module doc)."""

    def __init__(
        self,
        *,
        url: str,
        audience: str,
        issuer: str | None = None,
        client_id: str | None = None,
        client_secret: str | None = None,
        leeway: float = 60.0,
    ) -> None:
        if not audience:
            raise ValueError("token introspection needs the audience (--auth-audience)")
        self.url = url
        self.audience = audience
        self.issuer = issuer or None
        self.leeway = leeway
        client_id = client_id if client_id is not None else os.environ.get(CLIENT_ID_ENV)
        secret = client_secret if client_secret is not None else os.environ.get(CLIENT_SECRET_ENV)
        self._headers: list[tuple[str, str]] = []
        if client_id:
            # RFC 6749 2.3.1: each part form-encoded before they are joined.
            pair = f"{quote(client_id, safe='')}:{quote(secret or '', safe='')}"
            self._headers.append(
                ("authorization", f"Basic {base64.b64encode(pair.encode()).decode()}")
            )
        self.fetcher = Fetcher()
        #: How many times the endpoint was asked (for tests and logs).
        self.calls = 0

    async def verify_token(self, token: str) -> Principal:
        self.calls += 1
        answer = await self.fetcher.json(
            self.url,
            form={"token": token, "token_type_hint": "access_token"},
            headers=self._headers,
        )
        if "active" not in answer:
            raise AuthUnavailable(f"{self.url} answered no 'active' member")
        if answer.get("active") is not True:
            raise InvalidToken("the token is not active")
        why = malformed_claim(answer)
        if why is not None:
            raise InvalidToken(why)
        now = time.time()
        exp = _number(answer.get("exp"))
        if exp is not None and now > exp + self.leeway:
            raise InvalidToken("the token has expired")
        nbf = _number(answer.get("nbf"))
        if nbf is not None and now + self.leeway < nbf:
            raise InvalidToken("the token is not valid yet")
        if self.issuer is not None and answer.get("iss") != self.issuer:
            raise InvalidToken("the token was issued by another issuer (iss)")
        if not _names(answer.get("aud"), self.audience):
            raise InvalidToken("the token was not issued for this resource (aud)")
        return principal_from_claims(answer, token)

    def close(self) -> None:
        self.fetcher.close()


def _number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _names(aud: Any, audience: str) -> bool:
    if isinstance(aud, str):
        return aud == audience
    if isinstance(aud, list):
        return audience in aud
    return False


__all__ = ["CLIENT_ID_ENV", "CLIENT_SECRET_ENV", "IntrospectionVerifier"]
