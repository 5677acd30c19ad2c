"""Claims of the wrong type are refused as malformed (issue 40 item 6), against a real
authorization server on 127.0.0.1 (tests/oauth_server.py): JWTs signed with its published
key and checked against its JWKS, opaque tokens through its introspection endpoint, and the
bearer guard in front of both (401 ``invalid_token``, nothing kept in the good-token cache).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import jwt
import pytest

from harness.oauth_server import AuthorizationServer
from jetmcp.auth import InvalidToken
from jetmcp.auth.introspection import IntrospectionVerifier
from jetmcp.auth.jwt import JwtVerifier
from jetmcp.transports.asgi import _Headers
from jetmcp.transports.auth import AuthRefusal, BearerGuard

AUDIENCE = "http://127.0.0.1:9/mcp"
TIMEOUT = 20.0
FAR = int(time.time()) + 3600

#: (claim, value of the wrong type) -- every one must be refused.
WRONG: list[tuple[str, Any]] = [
    ("exp", str(FAR)),
    ("exp", True),
    ("exp", [FAR]),
    ("exp", None),
    ("nbf", "0"),
    ("nbf", False),
    ("iat", "0"),
    ("iat", True),
    ("aud", 7),
    ("aud", [AUDIENCE, 7]),
    ("aud", {"x": AUDIENCE}),
    ("iss", ["ISSUER"]),
    ("iss", 1),
    ("scope", ["mcp"]),
    ("scope", 1),
    ("scp", 1),
    ("scp", ["mcp", 2]),
    ("sub", 42),
]


@pytest.fixture(scope="module")
def auth() -> Iterator[AuthorizationServer]:
    with AuthorizationServer() as server:
        yield server


def run(coro: Any) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(coro, TIMEOUT)

    return asyncio.run(bounded())


def refusal(v: Any, token: str) -> str:
    async def go() -> str:
        with pytest.raises(InvalidToken) as caught:
            await v.verify_token(token)
        return str(caught.value)

    return str(run(go()))


def fill(auth: AuthorizationServer, value: Any) -> Any:
    if value == ["ISSUER"]:
        return [auth.issuer]
    return value


def signed(auth: AuthorizationServer, extra: dict[str, Any]) -> str:
    """A JWT with the server's key, its claims serialized by hand (PyJWT will not encode
    some wrong types, such as a numeric ``iss``)."""
    now = int(time.time())
    claims = {"iss": auth.issuer, "aud": AUDIENCE, "sub": "alice", "exp": now + 600, "iat": now}
    claims.update(extra)
    key = auth.key
    return jwt.api_jws.PyJWS().encode(
        json.dumps(claims).encode(), key.private, algorithm=key.alg, headers={"kid": key.kid}
    )


@pytest.mark.parametrize(("claim", "value"), WRONG)
def test_a_jwt_claim_of_the_wrong_type_is_malformed(
    auth: AuthorizationServer, claim: str, value: Any
) -> None:
    v = JwtVerifier(issuer=auth.issuer, audience=AUDIENCE, jwks_url=auth.jwks_url)
    token = signed(auth, {claim: fill(auth, value)})
    # PyJWT refuses some of these itself (a null exp is "no exp claim", a boolean exp is
    # 1 s past the epoch); the rest are ours. Either way the token is refused.
    assert refusal(v, token)


@pytest.mark.parametrize(("claim", "value"), WRONG)
def test_an_introspection_claim_of_the_wrong_type_is_malformed(
    auth: AuthorizationServer, claim: str, value: Any
) -> None:
    client_id, secret = auth.introspection_client
    v = IntrospectionVerifier(
        url=auth.introspection_url,
        audience=AUDIENCE,
        issuer=auth.issuer,
        client_id=client_id,
        client_secret=secret,
    )
    token = auth.mint_opaque(AUDIENCE, **{claim: fill(auth, value)})
    assert f"{claim} claim is malformed" in refusal(v, token)


def test_a_string_exp_is_refused_by_the_guard_and_never_cached(auth: AuthorizationServer) -> None:
    """The reported case: ``exp`` as a JSON string was accepted and cached for 300 s."""
    v = JwtVerifier(issuer=auth.issuer, audience=AUDIENCE, jwks_url=auth.jwks_url)
    g = BearerGuard(v, resource=AUDIENCE, authorization_servers=["http://as"], cache_seconds=300)
    token = signed(auth, {"exp": str(int(time.time()) + 1)})
    headers = _Headers([(b"authorization", f"Bearer {token}".encode())])

    async def go() -> None:
        for _ in range(2):
            with pytest.raises(AuthRefusal) as caught:
                await g.principal(headers)
            assert caught.value.status == 401
            challenge = dict(caught.value.headers)["www-authenticate"]
            assert 'error="invalid_token"' in challenge and "exp claim is malformed" in challenge
        assert not g._good

    run(go())


def test_well_typed_tokens_still_pass(auth: AuthorizationServer) -> None:
    v = JwtVerifier(issuer=auth.issuer, audience=AUDIENCE, jwks_url=auth.jwks_url)
    token = auth.mint([AUDIENCE, "other"], extra={"scp": ["a", "b"], "nbf": 0, "iat": 1.5})
    principal = run(v.verify_token(token))
    assert principal.subject == "alice" and principal.scopes == {"mcp"}
