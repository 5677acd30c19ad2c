"""Verifying JWT access tokens (RFC 9068) against the issuer's published keys (JWKS).

Checks, in order: the header's ``alg`` is on the allow-list (asymmetric algorithms only, so
``none`` and ``HS256`` signed with the public key as a secret never get as far as a key);
its ``kid`` names a key of the issuer's JWKS whose type and ``alg`` fit (an unknown ``kid``
fetches the JWKS again, at most once per cooldown, which is how a rotated key is picked
up); the signature; then ``exp``, ``nbf`` and ``iat`` with the configured clock skew,
``iss`` and ``aud`` (the audience must name this resource: RFC 8707, no token
passthrough). PyJWT with cryptography does the cryptography; a missing install is a clear
error when the verifier is built.

The JWKS is kept ``jwks_seconds`` and fetched again after that; when a refresh fails the
keys already known stay in use (an authorization server restarting does not lock every
client out), and with no keys at all a request is answered 503.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from jetmcp.auth.fetch import Fetcher
from jetmcp.core.principal import AuthUnavailable, InvalidToken, Principal, scopes_of

if TYPE_CHECKING:
    from jwt import PyJWK

log = logging.getLogger("jetmcp.auth")

#: What a token may be signed with unless told otherwise: every asymmetric JWS algorithm.
DEFAULT_ALGORITHMS: tuple[str, ...] = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)
_ASYMMETRIC = frozenset(DEFAULT_ALGORITHMS) | {"ES256K", "ES521", "Ed25519", "Ed448"}
#: The key type (``kty``) each algorithm family needs.
_KEY_TYPES = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}


def require_pyjwt(flag: str) -> None:
    """Raise an ImportError saying which extra to install when PyJWT or cryptography is
    missing (``flag`` names what asked for them)."""
    try:
        import cryptography  # noqa: F401
        import jwt  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            f"{flag} needs PyJWT and cryptography ({exc.name} is not installed): "
            "pip install 'jetmcp[auth]'"
        ) from None


def check_algorithms(algorithms: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """The allow-list, refused when it names a symmetric algorithm or ``none``: a resource
    server verifies with public keys only."""
    bad = [a for a in algorithms if a not in _ASYMMETRIC]
    if bad or not algorithms:
        raise ValueError(
            f"token algorithms must be asymmetric JWS algorithms ({', '.join(DEFAULT_ALGORITHMS)}),"
            f" not {', '.join(bad) or 'none at all'}"
        )
    return tuple(algorithms)


def metadata_urls(issuer: str) -> list[str]:
    """Where an issuer publishes its metadata: RFC 8414's well-known URL (the path suffix
    after the well-known part), then OpenID Connect discovery's."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    rfc8414 = urlunsplit(
        (parts.scheme, parts.netloc, f"/.well-known/oauth-authorization-server{path}", "", "")
    )
    oidc = urlunsplit(
        (parts.scheme, parts.netloc, f"{path}/.well-known/openid-configuration", "", "")
    )
    return [rfc8414, oidc]


class Jwks:
    """The issuer's signing keys, fetched on demand and kept for ``ttl`` seconds."""

    def __init__(
        self,
        url: str | None,
        issuer: str,
        fetcher: Fetcher,
        *,
        ttl: float = 3600.0,
        cooldown: float = 10.0,
    ) -> None:
        #: The JWKS URL; None: read ``jwks_uri`` from the issuer's metadata first.
        self.url = url
        self.issuer = issuer
        self.fetcher = fetcher
        self.ttl = ttl
        self.cooldown = cooldown
        self._keys: dict[str | None, list[dict[str, Any]]] = {}
        #: Keys built for (kid, alg): building one parses it, which costs.
        self._built: dict[tuple[str | None, str], PyJWK] = {}
        self._fetched = -float("inf")
        self._attempted = -float("inf")
        self._refreshing: asyncio.Future[None] | None = None
        #: How many times the JWKS was fetched (for tests and logs).
        self.fetches = 0

    async def key(self, kid: str | None, alg: str) -> PyJWK:
        """The key a token with this header is checked with; InvalidToken when the JWKS has
        none that fits, AuthUnavailable when no JWKS could be fetched at all."""
        now = time.monotonic()
        if now - self._fetched > self.ttl and now - self._attempted >= self.cooldown:
            await self._refresh(required=not self._keys)
        found = self._find(kid, alg)
        if found is None and time.monotonic() - self._attempted >= self.cooldown:
            # A key we have not seen: the issuer may have rotated to it since.
            await self._refresh(required=not self._keys)
            found = self._find(kid, alg)
        if found is None:
            if not self._keys:
                raise AuthUnavailable("the issuer's JWKS could not be fetched")
            raise InvalidToken(
                "the token's key id (kid) names no key of the issuer"
                if kid is not None
                else "the token names no key id (kid) and the issuer has several keys"
            )
        return found

    def _find(self, kid: str | None, alg: str) -> PyJWK | None:
        built = self._built.get((kid, alg))
        if built is not None:
            return built
        candidates = self._keys.get(kid) if kid is not None else self._all()
        if not candidates:
            return None
        fits = [jwk for jwk in candidates if _fits(jwk, alg)]
        if len(fits) != 1:
            return None
        from jwt import PyJWK
        from jwt.exceptions import PyJWKError

        try:
            built = PyJWK(fits[0], algorithm=alg)
        except (PyJWKError, ValueError, TypeError):
            log.warning("a key of the JWKS of %s cannot be used (kid %r)", self.issuer, kid)
            return None
        self._built[(kid, alg)] = built
        return built

    def _all(self) -> list[dict[str, Any]]:
        return [jwk for keys in self._keys.values() for jwk in keys]

    async def _refresh(self, *, required: bool) -> None:
        """Fetch the JWKS once for every waiter (single flight). A failure is logged; it is
        raised only when no keys are known yet (``required``)."""
        if self._refreshing is None:
            self._refreshing = asyncio.ensure_future(self._fetch())
        running = self._refreshing
        try:
            await asyncio.shield(running)
        except AuthUnavailable as exc:
            if required:
                raise
            log.warning("keeping the JWKS known so far: %s", exc)
        finally:
            if running.done() and self._refreshing is running:
                self._refreshing = None

    async def _fetch(self) -> None:
        self._attempted = time.monotonic()
        self.fetches += 1
        if self.url is None:
            self.url = await self._discover()
        document = await self.fetcher.json(self.url)
        keys = document.get("keys")
        if not isinstance(keys, list):
            raise AuthUnavailable(f"{self.url} is not a JWKS (no keys array)")
        by_kid: dict[str | None, list[dict[str, Any]]] = {}
        for jwk in keys:
            if isinstance(jwk, dict) and jwk.get("use", "sig") == "sig":
                kid = jwk.get("kid")
                by_kid.setdefault(kid if isinstance(kid, str) else None, []).append(jwk)
        self._keys = by_kid
        self._built = {}
        self._fetched = time.monotonic()

    async def _discover(self) -> str:
        errors: list[str] = []
        for url in metadata_urls(self.issuer):
            try:
                document = await self.fetcher.json(url)
            except AuthUnavailable as exc:
                errors.append(str(exc))
                continue
            jwks_uri = document.get("jwks_uri")
            if document.get("issuer") == self.issuer and isinstance(jwks_uri, str):
                return jwks_uri
            errors.append(f"{url} names no jwks_uri for issuer {self.issuer}")
        raise AuthUnavailable("; ".join(errors))


def _fits(jwk: dict[str, Any], alg: str) -> bool:
    declared = jwk.get("alg")
    if declared is not None and declared != alg:
        return False
    kty = _KEY_TYPES.get(alg[:2])
    return kty is None or jwk.get("kty") == kty


class JwtVerifier:
    """A :class:`~jetmcp.auth.TokenVerifier` for JWT access tokens (see the module doc).

    ``audience``: this resource's URL, which ``aud`` must name. ``jwks_url``: where the
    issuer's keys are (None: found through the issuer's metadata). ``leeway``: the clock
    skew allowed on ``exp``/``nbf``/``iat``, in seconds."""

    def __init__(
        self,
        *,
        issuer: str,
        audience: str,
        jwks_url: str | None = None,
        algorithms: list[str] | tuple[str, ...] = DEFAULT_ALGORITHMS,
        leeway: float = 60.0,
        jwks_seconds: float = 3600.0,
        jwks_cooldown_seconds: float = 10.0,
    ) -> None:
        require_pyjwt("JWT verification")
        if not issuer:
            raise ValueError("JWT verification needs the issuer (--auth-issuer)")
        if not audience:
            raise ValueError("JWT verification needs the audience (--auth-audience)")
        self.issuer = issuer
        self.audience = audience
        self.algorithms = frozenset(check_algorithms(algorithms))
        self.leeway = leeway
        self.fetcher = Fetcher()
        self.jwks = Jwks(
            jwks_url, issuer, self.fetcher, ttl=jwks_seconds, cooldown=jwks_cooldown_seconds
        )

    async def verify_token(self, token: str) -> Principal:
        import jwt

        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise InvalidToken("the token is not a JWT") from None
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.algorithms:
            raise InvalidToken(f"the token's algorithm {alg!r} is not accepted")
        kid = header.get("kid")
        key = await self.jwks.key(kid if isinstance(kid, str) else None, alg)
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[alg],
                audience=self.audience,
                issuer=self.issuer,
                leeway=self.leeway,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.ExpiredSignatureError:
            raise InvalidToken("the token has expired") from None
        except jwt.ImmatureSignatureError:
            raise InvalidToken("the token is not valid yet") from None
        except jwt.InvalidAudienceError:
            raise InvalidToken("the token was not issued for this resource (aud)") from None
        except jwt.InvalidIssuerError:
            raise InvalidToken("the token was issued by another issuer (iss)") from None
        except jwt.MissingRequiredClaimError as exc:
            raise InvalidToken(f"the token has no {exc.claim} claim") from None
        except jwt.InvalidSignatureError:
            raise InvalidToken("the token's signature does not verify") from None
        except jwt.PyJWTError as exc:
            raise InvalidToken(f"the token is invalid: {type(exc).__name__}") from None
        why = malformed_claim(claims)
        if why is not None:
            raise InvalidToken(why)
        return principal_from_claims(claims, token)

    def close(self) -> None:
        self.fetcher.close()


#: Claims that must be JSON numbers (RFC 7519 NumericDate) when present.
_NUMERIC_CLAIMS = ("exp", "nbf", "iat")
#: Claims that must be JSON strings when present.
_STRING_CLAIMS = ("iss", "sub", "scope", "client_id", "azp")


def malformed_claim(claims: dict[str, Any]) -> str | None:
    """Why a token's claims (a JWT payload or an introspection answer) are malformed, or
    None: ``exp``/``nbf``/``iat`` must be numbers (not strings, not booleans), ``iss``,
    ``sub``, ``scope``, ``client_id`` and ``azp`` strings, ``aud`` and ``scp`` a string or a
    list of strings. A token with a claim of the wrong type is refused as a whole, never
    read leniently (a string ``exp`` must not turn into "no expiry")."""
    for name in _NUMERIC_CLAIMS:
        value = claims.get(name)
        if name in claims and (not isinstance(value, int | float) or isinstance(value, bool)):
            return f"the token's {name} claim is malformed (not a number)"
    for name in _STRING_CLAIMS:
        if name in claims and not isinstance(claims[name], str):
            return f"the token's {name} claim is malformed (not a string)"
    for name in ("aud", "scp"):
        value = claims.get(name)
        if name in claims and not (
            isinstance(value, str)
            or (isinstance(value, list) and all(isinstance(v, str) for v in value))
        ):
            return f"the token's {name} claim is malformed (not a string or list of strings)"
    return None


def principal_from_claims(claims: dict[str, Any], token: str) -> Principal:
    """The principal of a verified token's claims (a JWT payload or an introspection
    answer): ``sub``, ``scope``/``scp``, ``client_id``/``azp``, ``iss``, ``exp``."""
    subject = claims.get("sub")
    client = claims.get("client_id", claims.get("azp"))
    issuer = claims.get("iss")
    expires = claims.get("exp")
    return Principal(
        subject=subject if isinstance(subject, str) else None,
        scopes=scopes_of(claims.get("scope", claims.get("scp"))),
        client_id=client if isinstance(client, str) else None,
        issuer=issuer if isinstance(issuer, str) else None,
        claims=claims,
        expires_at=float(expires)
        if isinstance(expires, int | float) and not isinstance(expires, bool)
        else None,
        token=token,
    )


__all__ = [
    "DEFAULT_ALGORITHMS",
    "Jwks",
    "JwtVerifier",
    "check_algorithms",
    "malformed_claim",
    "metadata_urls",
    "principal_from_claims",
    "require_pyjwt",
]
