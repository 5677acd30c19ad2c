"""Token verification against a real authorization server on 127.0.0.1 (tests/oauth_server.py):
JWTs checked against its JWKS (every way a token can be wrong, key rotation, the refetch
cooldown), opaque tokens through its introspection endpoint, and the bearer guard's cache.

The verifiers run in this process, on real HTTP to the authorization server, with real
signed tokens; the HTTP behaviour of a guarded server is in test_auth.py.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from typing import Any

import jwt
import pytest

from harness.oauth_server import AuthorizationServer, SigningKey
from jetmcp.auth import AuthUnavailable, InvalidToken, Principal
from jetmcp.auth.introspection import IntrospectionVerifier
from jetmcp.auth.jwt import JwtVerifier, check_algorithms
from jetmcp.transports.asgi import _Headers
from jetmcp.transports.auth import AuthRefusal, BearerGuard

AUDIENCE = "http://127.0.0.1:9/mcp"
TIMEOUT = 20.0


@pytest.fixture(scope="module")
def auth() -> Iterator[AuthorizationServer]:
    with AuthorizationServer() as server:
        yield server


def run(coro: Any) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(coro, TIMEOUT)

    return asyncio.run(bounded())


def verifier(auth: AuthorizationServer, **kw: Any) -> JwtVerifier:
    kw.setdefault("jwks_url", auth.jwks_url)
    return JwtVerifier(issuer=auth.issuer, audience=AUDIENCE, **kw)


def refused(v: Any, token: str) -> str:
    async def go() -> str:
        with pytest.raises(InvalidToken) as caught:
            await v.verify_token(token)
        return str(caught.value)

    return str(run(go()))


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def forged(header: dict[str, Any], claims: dict[str, Any], sign: Any) -> str:
    """A JWT put together by hand (what no library would sign)."""
    head = b64(json.dumps(header).encode()) + "." + b64(json.dumps(claims).encode())
    return head + "." + b64(sign(head.encode()))


def claims(auth: AuthorizationServer) -> dict[str, Any]:
    now = int(time.time())
    return {"iss": auth.issuer, "aud": AUDIENCE, "sub": "mallory", "exp": now + 600, "iat": now}


# --------------------------------------------------------------------------- JWT


def test_a_good_token_gives_its_principal(auth: AuthorizationServer) -> None:
    token = auth.mint(AUDIENCE, scope="mcp files:read")
    principal = run(verifier(auth).verify_token(token))
    assert isinstance(principal, Principal)
    assert principal.subject == "alice"
    assert principal.scopes == {"mcp", "files:read"}
    assert principal.client_id == "test-client"
    assert principal.issuer == auth.issuer
    assert principal.claims["aud"] == AUDIENCE
    assert principal.token == token
    # Never in its repr (what a log line would show), nor in its key.
    assert token not in repr(principal) and token not in principal.key


def test_the_principal_key_is_issuer_subject_and_client(auth: AuthorizationServer) -> None:
    v = verifier(auth)
    first = run(v.verify_token(auth.mint(AUDIENCE, scope="mcp")))
    again = run(v.verify_token(auth.mint(AUDIENCE, scope="mcp admin")))
    other = run(v.verify_token(auth.mint(AUDIENCE, subject="bob")))
    other_client = run(v.verify_token(auth.mint(AUDIENCE, client_id="another-app")))
    assert first.key == again.key
    assert len({first.key, other.key, other_client.key}) == 3


@pytest.mark.parametrize(
    ("kind", "why"),
    [
        ("expired", "has expired"),
        ("not yet valid", "not valid yet"),
        ("wrong issuer", "another issuer"),
        ("wrong audience", "not issued for this resource"),
        ("no audience", "no aud claim"),
        ("no expiry", "no exp claim"),
        ("unknown kid", "names no key"),
        ("bad signature", "signature does not verify"),
        ("not a jwt", "not a JWT"),
    ],
)
def test_bad_tokens_are_refused(auth: AuthorizationServer, kind: str, why: str) -> None:
    now = time.time()
    tokens = {
        # Past the 60 s clock skew allowed by default.
        "expired": lambda: auth.mint(AUDIENCE, lifetime=-120),
        "not yet valid": lambda: auth.mint(AUDIENCE, not_before=now + 600),
        "wrong issuer": lambda: auth.mint(AUDIENCE, issuer="http://127.0.0.1:1"),
        "wrong audience": lambda: auth.mint("http://127.0.0.1:9/other"),
        "no audience": lambda: auth.mint(None),
        "no expiry": lambda: forged(
            {"alg": "RS256", "kid": auth.key.kid, "typ": "JWT"},
            {k: v for k, v in claims(auth).items() if k != "exp"},
            lambda data: auth.key.private.sign(data, *_pkcs1()),
        ),
        "unknown kid": lambda: auth.mint(AUDIENCE, key=SigningKey("never-published")),
        "bad signature": lambda: _tamper(auth.mint(AUDIENCE)),
        "not a jwt": lambda: "not-a-jwt",
    }
    assert why in refused(verifier(auth, jwks_cooldown_seconds=3600), tokens[kind]())


def _pkcs1() -> tuple[Any, Any]:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    return padding.PKCS1v15(), hashes.SHA256()


def _tamper(token: str) -> str:
    head, payload, signature = token.split(".")
    flipped = signature[:10] + ("A" if signature[10] != "A" else "B") + signature[11:]
    return f"{head}.{payload}.{flipped}"


def test_alg_none_is_refused(auth: AuthorizationServer) -> None:
    token = forged({"alg": "none", "kid": auth.key.kid}, claims(auth), lambda data: b"")
    assert "algorithm 'none' is not accepted" in refused(verifier(auth), token)


def test_hs256_signed_with_the_public_key_is_refused(auth: AuthorizationServer) -> None:
    """The classic confusion: the published public key used as an HMAC secret."""
    pem = auth.key.public_pem
    token = forged(
        {"alg": "HS256", "kid": auth.key.kid, "typ": "JWT"},
        claims(auth),
        lambda data: hmac.new(pem, data, hashlib.sha256).digest(),
    )
    assert "algorithm 'HS256' is not accepted" in refused(verifier(auth), token)
    # Nor can it be let in by configuration: only asymmetric algorithms are taken.
    with pytest.raises(ValueError, match="asymmetric"):
        check_algorithms(["RS256", "HS256"])
    with pytest.raises(ValueError, match="asymmetric"):
        check_algorithms(["none"])


def test_an_algorithm_off_the_allow_list_is_refused(auth: AuthorizationServer) -> None:
    token = auth.mint(AUDIENCE)
    assert "algorithm 'RS256' is not accepted" in refused(
        verifier(auth, algorithms=["ES256"]), token
    )


def test_a_key_of_the_wrong_type_for_the_alg_is_refused(auth: AuthorizationServer) -> None:
    """A header that claims ES256 for the RSA key's kid finds no key to check it with."""
    token = forged({"alg": "ES256", "kid": auth.key.kid}, claims(auth), lambda data: b"\x00" * 64)
    assert "names no key" in refused(verifier(auth, jwks_cooldown_seconds=3600), token)


def test_the_clock_skew_allowance(auth: AuthorizationServer) -> None:
    token = auth.mint(AUDIENCE, lifetime=-30)
    assert run(verifier(auth).verify_token(token)).subject == "alice"
    assert "has expired" in refused(verifier(auth, leeway=0), token)
    early = auth.mint(AUDIENCE, not_before=time.time() + 30)
    assert run(verifier(auth).verify_token(early)).subject == "alice"


def test_an_audience_list_naming_this_resource_is_accepted(auth: AuthorizationServer) -> None:
    token = auth.mint(["http://127.0.0.1:9/other", AUDIENCE])
    assert run(verifier(auth).verify_token(token)).subject == "alice"


def test_scp_lists_and_azp_are_read(auth: AuthorizationServer) -> None:
    token = auth.mint(AUDIENCE, scope=None, client_id=None, extra={"scp": ["a", "b"], "azp": "x"})
    principal = run(verifier(auth).verify_token(token))
    assert principal.scopes == {"a", "b"} and principal.client_id == "x"


def test_key_rotation_is_picked_up(auth: AuthorizationServer) -> None:
    v = verifier(auth, jwks_cooldown_seconds=0)
    assert run(v.verify_token(auth.mint(AUDIENCE))).subject == "alice"
    fetched = v.jwks.fetches
    new = auth.rotate("k-rotated-rsa")
    assert run(v.verify_token(auth.mint(AUDIENCE, key=new))).subject == "alice"
    assert v.jwks.fetches == fetched + 1
    # An EC key, published alone: the old key's tokens stop working once it is gone.
    ec_key = auth.rotate("k-rotated-ec", keep_old=False, alg="ES256")
    try:
        assert run(v.verify_token(auth.mint(AUDIENCE, key=ec_key))).subject == "alice"
        assert "names no key" in refused(v, auth.mint(AUDIENCE, key=new))
    finally:
        auth.keys = [new]


def test_unknown_kids_refetch_at_most_once_per_cooldown(auth: AuthorizationServer) -> None:
    v = verifier(auth, jwks_cooldown_seconds=3600)
    assert run(v.verify_token(auth.mint(AUDIENCE))).subject == "alice"
    fetched = v.jwks.fetches

    async def flood() -> list[Any]:
        strangers = [auth.mint(AUDIENCE, key=SigningKey(f"s{i}")) for i in range(3)]
        return await asyncio.gather(
            *(v.verify_token(t) for t in strangers * 10), return_exceptions=True
        )

    results = run(flood())
    assert all(isinstance(r, InvalidToken) for r in results)
    assert v.jwks.fetches == fetched  # within the cooldown: no refetch at all

    v2 = verifier(auth, jwks_cooldown_seconds=0)
    assert run(v2.verify_token(auth.mint(AUDIENCE))).subject == "alice"
    fetched = v2.jwks.fetches
    stranger = auth.mint(AUDIENCE, key=SigningKey("s-flood"))

    async def concurrent() -> list[Any]:
        return await asyncio.gather(
            *(v2.verify_token(stranger) for _ in range(20)), return_exceptions=True
        )

    assert all(isinstance(r, InvalidToken) for r in run(concurrent()))
    # Concurrent lookups of one unknown kid share a single fetch.
    assert v2.jwks.fetches <= fetched + 2


def test_the_jwks_is_found_through_the_issuer_metadata(auth: AuthorizationServer) -> None:
    v = verifier(auth, jwks_url=None)
    assert run(v.verify_token(auth.mint(AUDIENCE))).subject == "alice"
    assert v.jwks.url == auth.jwks_url


def test_an_unreachable_issuer_is_unavailable_not_invalid(auth: AuthorizationServer) -> None:
    v = JwtVerifier(issuer=auth.issuer, audience=AUDIENCE, jwks_url="http://127.0.0.1:1/jwks")

    async def go() -> None:
        with pytest.raises(AuthUnavailable, match="cannot be reached"):
            await v.verify_token(auth.mint(AUDIENCE))

    run(go())


def test_a_failed_refresh_keeps_the_known_keys(auth: AuthorizationServer) -> None:
    v = verifier(auth, jwks_seconds=0.001, jwks_cooldown_seconds=0)
    token = auth.mint(AUDIENCE)
    assert run(v.verify_token(token)).subject == "alice"
    v.jwks.url = "http://127.0.0.1:1/jwks"  # the issuer goes away
    time.sleep(0.01)
    assert run(v.verify_token(token)).subject == "alice"


# --------------------------------------------------------------------------- introspection


def introspector(auth: AuthorizationServer, **kw: Any) -> IntrospectionVerifier:
    client_id, secret = auth.introspection_client
    return IntrospectionVerifier(
        url=auth.introspection_url,
        audience=AUDIENCE,
        issuer=auth.issuer,
        client_id=kw.pop("client_id", client_id),
        client_secret=kw.pop("client_secret", secret),
        **kw,
    )


def test_introspection_active_and_inactive(auth: AuthorizationServer) -> None:
    v = introspector(auth)
    principal = run(v.verify_token(auth.mint_opaque(AUDIENCE, scope="mcp admin")))
    assert principal.subject == "alice" and principal.scopes == {"mcp", "admin"}
    assert "not active" in refused(v, auth.mint_opaque(AUDIENCE, active=False))
    assert "not active" in refused(v, "never-issued")
    assert "not issued for this resource" in refused(
        v, auth.mint_opaque("http://127.0.0.1:9/other")
    )
    assert "aud claim is malformed" in refused(v, auth.mint_opaque(AUDIENCE, aud=None))
    assert "has expired" in refused(v, auth.mint_opaque(AUDIENCE, exp=int(time.time()) - 300))
    assert "another issuer" in refused(v, auth.mint_opaque(AUDIENCE, iss="http://elsewhere"))


def test_introspection_with_wrong_credentials_is_unavailable(auth: AuthorizationServer) -> None:
    v = introspector(auth, client_secret="wrong")

    async def go() -> None:
        with pytest.raises(AuthUnavailable, match="HTTP 401"):
            await v.verify_token(auth.mint_opaque(AUDIENCE))

    run(go())


# --------------------------------------------------------------------------- the guard's cache


def guard(v: Any, **kw: Any) -> BearerGuard:
    return BearerGuard(v, resource=AUDIENCE, authorization_servers=["http://as"], **kw)


def bearer(token: str) -> _Headers:
    return _Headers([(b"authorization", f"Bearer {token}".encode())])


def test_introspection_answers_are_cached_by_token(auth: AuthorizationServer) -> None:
    v = introspector(auth)
    g = guard(v)
    token = auth.mint_opaque(AUDIENCE)

    async def twice() -> None:
        for _ in range(5):
            assert (await g.principal(bearer(token))).subject == "alice"
        bad = auth.mint_opaque(AUDIENCE, active=False)
        for _ in range(5):
            with pytest.raises(AuthRefusal):
                await g.principal(bearer(bad))

    before = auth.hits["/introspect"]
    run(twice())
    assert auth.hits["/introspect"] - before == 2  # one per token, the refusal included
    assert v.calls == 2
    # Kept by digest: the raw token is nowhere in the cache.
    assert all(isinstance(k, bytes) and len(k) == 32 for k in g._good)


def test_the_cache_never_outlives_the_token(auth: AuthorizationServer) -> None:
    v = verifier(auth, leeway=0)
    g = guard(v, cache_seconds=300)
    token = auth.mint(AUDIENCE, lifetime=1)

    async def go() -> None:
        assert (await g.principal(bearer(token))).subject == "alice"
        await asyncio.sleep(1.2)
        with pytest.raises(AuthRefusal) as caught:
            await g.principal(bearer(token))
        assert caught.value.status == 401

    run(go())


def test_no_cache_verifies_every_request(auth: AuthorizationServer) -> None:
    v = introspector(auth)
    g = guard(v, cache_seconds=0)
    token = auth.mint_opaque(AUDIENCE)

    async def go() -> None:
        for _ in range(3):
            await g.principal(bearer(token))

    run(go())
    assert v.calls == 3


def test_the_cache_is_bounded(auth: AuthorizationServer) -> None:
    g = guard(verifier(auth), cache_size=4)

    async def go() -> None:
        for i in range(10):
            await g.principal(bearer(auth.mint(AUDIENCE, subject=f"u{i}")))

    run(go())
    assert len(g._good) == 4


def test_concurrent_requests_with_one_token_share_one_verification(
    auth: AuthorizationServer,
) -> None:
    v = introspector(auth)
    g = guard(v)
    token = auth.mint_opaque(AUDIENCE)

    async def go() -> None:
        await asyncio.gather(*(g.principal(bearer(token)) for _ in range(20)))

    run(go())
    assert v.calls == 1


def test_the_guard_checks_the_header(auth: AuthorizationServer) -> None:
    g = guard(verifier(auth), required_scopes=["mcp", "files:read"])

    async def status(headers: _Headers) -> tuple[int, str]:
        with pytest.raises(AuthRefusal) as caught:
            await g.principal(headers)
        found = dict(caught.value.headers).get("www-authenticate", "")
        return caught.value.status, found

    meta = 'resource_metadata="http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp"'
    code, challenge = run(status(_Headers([])))
    assert code == 401 and meta in challenge and "error=" not in challenge
    assert 'scope="files:read mcp"' in challenge
    code, challenge = run(status(_Headers([(b"authorization", b"Basic dXNlcjpwYXNz")])))
    assert code == 401 and "error=" not in challenge
    code, challenge = run(status(_Headers([(b"authorization", b"Bearer a b")])))
    assert code == 400 and 'error="invalid_request"' in challenge
    token = auth.mint(AUDIENCE, scope="mcp")
    two = _Headers([(b"authorization", f"Bearer {token}".encode())] * 2)
    code, challenge = run(status(two))
    assert code == 400 and "more than one" in challenge
    code, challenge = run(status(bearer(token)))
    assert code == 403 and 'error="insufficient_scope"' in challenge
    assert 'scope="files:read mcp"' in challenge and meta in challenge
    enough = auth.mint(AUDIENCE, scope="mcp files:read")
    assert run(g.principal(bearer(enough))).scopes == {"mcp", "files:read"}
    # The scheme is case-insensitive (RFC 7235).
    lower = _Headers([(b"authorization", f"bearer {enough}".encode())])
    assert run(g.principal(lower)).subject == "alice"


def test_a_verifier_returning_an_sdk_access_token(auth: AuthorizationServer) -> None:
    """The official SDK's TokenVerifier protocol fits as it is."""
    from mcp.server.auth.provider import AccessToken

    class SdkVerifier:
        async def verify_token(self, token: str) -> AccessToken | None:
            if token != "good-token":
                return None
            return AccessToken(
                token=token,
                client_id="sdk-client",
                scopes=["mcp"],
                expires_at=int(time.time()) + 60,
                subject="carol",
                resource=AUDIENCE,
                claims={"iss": "http://as"},
            )

    g = guard(SdkVerifier(), check_resource=AUDIENCE)
    principal = run(g.principal(bearer("good-token")))
    assert (principal.subject, principal.client_id, principal.issuer) == (
        "carol",
        "sdk-client",
        "http://as",
    )
    assert principal.scopes == {"mcp"}

    async def bad() -> int:
        with pytest.raises(AuthRefusal) as caught:
            await g.principal(bearer("bad-token"))
        return caught.value.status

    assert run(bad()) == 401
    wrong = guard(SdkVerifier(), check_resource="http://127.0.0.1:9/elsewhere")

    async def elsewhere() -> bytes:
        with pytest.raises(AuthRefusal) as caught:
            await wrong.principal(bearer("good-token"))
        return caught.value.body

    assert b"not issued for this resource" in run(elsewhere())


def test_pyjwt_decodes_what_the_test_server_signs(auth: AuthorizationServer) -> None:
    """The authorization server itself is sound: its tokens check out with PyJWT alone."""
    token = auth.mint(AUDIENCE)
    decoded = jwt.decode(
        token, auth.key.private.public_key(), algorithms=["RS256"], audience=AUDIENCE
    )
    assert decoded["iss"] == auth.issuer
