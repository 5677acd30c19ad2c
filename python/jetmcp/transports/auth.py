"""The OAuth 2.1 resource server in front of the HTTP transports (MCP authorization,
2025-06-18 and later): one wrapper, like the origin guard.

It serves the protected resource metadata (RFC 9728) at ``/.well-known/oauth-protected-resource``
and at that path suffixed with the MCP endpoint's path, and checks the bearer token of every
other request it is given:

- no ``Authorization: Bearer`` at all: 401 with ``WWW-Authenticate: Bearer
  resource_metadata="..."`` (and ``scope`` when the server requires some), which starts a
  client's OAuth flow;
- a token that is refused: 401 with ``error="invalid_token"`` and why;
- a malformed header, or more than one: 400 with ``error="invalid_request"``;
- a token without the scopes every request needs: 403 with ``error="insufficient_scope"``
  and the ``scope`` to ask for (the step-up the spec describes);
- a token that cannot be checked now (the authorization server is down): 503.

Verified tokens are kept (by SHA-256 digest, never as text) until they expire or
``cache_seconds`` pass, whichever is first, so a client that sends the same token on every
request pays for its verification once; refused ones for a minute at most (so a stream of
bad tokens does not reach the authorization server each time). Both caches are bounded.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import time
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson

from jetmcp import _wire
from jetmcp.core.principal import (
    AuthUnavailable,
    InvalidToken,
    Principal,
    TokenVerifier,
    as_principal,
)
from jetmcp.errors import INVALID_REQUEST, SERVER_ERROR

log = logging.getLogger("jetmcp.auth")

WELL_KNOWN = "/.well-known/oauth-protected-resource"
#: RFC 6750's ``b64token``.
_TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
#: How the usual header starts (the scheme is case-insensitive; these two are what clients
#: send, anything else takes the general path).
_BEARER = frozenset({"Bearer ", "bearer "})
#: The longest a refused token is remembered as refused.
NEGATIVE_SECONDS = 60.0
_JSON = ("content-type", "application/json")


class AuthRefusal(Exception):
    """A request the guard refuses: its status, headers and body."""

    def __init__(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        super().__init__(status)
        self.status = status
        self.headers = headers
        self.body = body


def metadata_url(resource: str) -> str:
    """RFC 9728 section 3.1: the well-known path goes between the resource's host and its
    path (``https://h/mcp`` -> ``https://h/.well-known/oauth-protected-resource/mcp``)."""
    parts = urlsplit(resource)
    path = parts.path.rstrip("/")
    return urlunsplit((parts.scheme, parts.netloc, f"{WELL_KNOWN}{path}", "", ""))


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class BearerGuard:
    """Checks bearer tokens with ``verifier`` for the resource ``resource`` (its URL: what
    tokens must name as their audience)."""

    def __init__(
        self,
        verifier: TokenVerifier,
        *,
        resource: str,
        authorization_servers: list[str],
        required_scopes: Iterable[str] = (),
        scopes_supported: Callable[[], Iterable[str]] | None = None,
        endpoint_paths: Iterable[str] = (),
        resource_name: str | None = None,
        cache_seconds: float = 300.0,
        cache_size: int = 10_000,
        check_resource: str | None = None,
    ) -> None:
        self.verifier = verifier
        #: When set, the verifier's answer must report this ``resource`` (RFC 8707).
        self.check_resource = check_resource
        self.resource = resource
        self.authorization_servers = list(authorization_servers)
        self.required_scopes = frozenset(required_scopes)
        self._scopes_supported = scopes_supported
        self.resource_name = resource_name
        self.cache_seconds = cache_seconds
        self.cache_size = max(1, cache_size)
        self.metadata_url = metadata_url(resource)
        own = urlsplit(resource).path.rstrip("/")
        self.metadata_paths = frozenset(
            {WELL_KNOWN, f"{WELL_KNOWN}{own}"}
            | {f"{WELL_KNOWN}{p.rstrip('/')}" for p in endpoint_paths if p}
        )
        #: digest -> (principal, monotonic deadline), oldest first.
        self._good: dict[bytes, tuple[Principal, float]] = {}
        #: digest -> (why it was refused, monotonic deadline), oldest first.
        self._bad: dict[bytes, tuple[str, float]] = {}
        #: Verifications under way, so concurrent requests with one token share one.
        self._pending: dict[bytes, asyncio.Future[Principal]] = {}
        challenge = f"Bearer resource_metadata={_quoted(self.metadata_url)}"
        if self.required_scopes:
            challenge += f", scope={_quoted(' '.join(sorted(self.required_scopes)))}"
        self._missing = [
            _JSON,
            ("www-authenticate", challenge),
        ]

    # -- the metadata document -----------------------------------------------------------

    def metadata(self) -> dict[str, Any]:
        """The protected resource metadata (RFC 9728 section 2)."""
        scopes = set(self.required_scopes)
        if self._scopes_supported is not None:
            scopes.update(self._scopes_supported())
        doc: dict[str, Any] = {
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        }
        if scopes:
            doc["scopes_supported"] = sorted(scopes)
        if self.resource_name:
            doc["resource_name"] = self.resource_name
        return doc

    def serve_metadata(self, proto: Any, method: str) -> None:
        if method not in ("GET", "HEAD"):
            proto.response_bytes(
                405,
                [_JSON, ("allow", "GET, HEAD")],
                _wire.encode_error(None, INVALID_REQUEST, f"Method not allowed: {method}"),
            )
            return
        body = orjson.dumps(self.metadata())
        headers = [
            _JSON,
            ("access-control-allow-origin", "*"),
            ("cache-control", "max-age=300"),
        ]
        if method == "HEAD":
            proto.response_empty(200, [*headers, ("content-length", str(len(body)))])
        else:
            proto.response_bytes(200, headers, body)

    # -- checking a request --------------------------------------------------------------

    def cached(self, headers: Any) -> Principal | None:
        """The principal of a request whose token was verified before and is still kept,
        else None (then :meth:`principal` says what to do): the hot path, no coroutine."""
        value = headers.get("authorization")
        if value is None or value[:7] not in _BEARER:
            return None
        good = self._good.get(hashlib.sha256(value[7:].encode()).digest())
        if (
            good is None
            or time.monotonic() >= good[1]
            or len(headers.get_all("authorization")) != 1
            or (self.required_scopes and not good[0].scopes >= self.required_scopes)
        ):
            return None
        return good[0]

    async def principal(self, headers: Any) -> Principal:
        """The principal of a request's bearer token; raises :class:`AuthRefusal`."""
        values = headers.get_all("authorization")
        if len(values) != 1:
            if values:
                raise self._malformed("more than one Authorization header")
            if "authorization" in headers:
                raise self._malformed("the Authorization header cannot be read")
            raise AuthRefusal(
                401,
                self._missing,
                _wire.encode_error(
                    None, INVALID_REQUEST, "Unauthorized: a bearer token is required"
                ),
            )
        scheme, _, token = values[0].strip().partition(" ")
        if scheme.lower() != "bearer":
            raise AuthRefusal(
                401,
                self._missing,
                _wire.encode_error(
                    None, INVALID_REQUEST, "Unauthorized: only Bearer tokens are accepted"
                ),
            )
        token = token.strip()
        if not _TOKEN.fullmatch(token):
            raise self._malformed("the bearer token is not a valid b64token")
        principal = await self._verified(token)
        if self.required_scopes and not principal.scopes >= self.required_scopes:
            raise self.insufficient_scope(self.required_scopes)
        return principal

    async def _verified(self, token: str) -> Principal:
        digest = hashlib.sha256(token.encode()).digest()
        now = time.monotonic()
        good = self._good.get(digest)
        if good is not None:
            if now < good[1]:
                return good[0]
            del self._good[digest]
        bad = self._bad.get(digest)
        if bad is not None:
            if now < bad[1]:
                raise self._invalid(bad[0])
            del self._bad[digest]
        pending = self._pending.get(digest)
        if pending is None:
            pending = asyncio.ensure_future(self._verify(token, digest))
            self._pending[digest] = pending
            pending.add_done_callback(lambda done: self._settled(digest, done))
        try:
            return await asyncio.shield(pending)
        except InvalidToken as exc:
            raise self._invalid(str(exc)) from None
        except AuthUnavailable as exc:
            # Which authorization server failed, and how, is for the operator's log only.
            log.warning("a bearer token could not be checked: %s", exc)
            raise AuthRefusal(
                503,
                [_JSON, ("retry-after", "5")],
                _wire.encode_error(
                    None, SERVER_ERROR, "The access token cannot be checked right now; retry later"
                ),
            ) from None

    def _settled(self, digest: bytes, done: asyncio.Future[Principal]) -> None:
        self._pending.pop(digest, None)
        if not done.cancelled():
            done.exception()  # retrieved here: every waiter may have left meanwhile

    async def _verify(self, token: str, digest: bytes) -> Principal:
        negative = min(self.cache_seconds, NEGATIVE_SECONDS)
        try:
            answer = await self.verifier.verify_token(token)
            if (
                answer is not None
                and self.check_resource is not None
                and getattr(answer, "resource", None) != self.check_resource
            ):
                raise InvalidToken("the token was not issued for this resource")
            principal = as_principal(answer, token)
        except InvalidToken as exc:
            self._remember(self._bad, digest, str(exc), negative)
            raise
        if principal is None:
            why = "the token was refused"
            self._remember(self._bad, digest, why, negative)
            raise InvalidToken(why)
        keep = self.cache_seconds
        if principal.expires_at is not None:
            # Kept no longer than the token is valid: past it, it is verified again.
            keep = min(keep, principal.expires_at - time.time())
        self._remember(self._good, digest, principal, keep)
        return principal

    def _remember(self, cache: dict[bytes, Any], digest: bytes, value: Any, seconds: float) -> None:
        if seconds <= 0:
            return
        if len(cache) >= self.cache_size:
            del cache[next(iter(cache))]
        cache[digest] = (value, time.monotonic() + seconds)

    # -- refusals ------------------------------------------------------------------------

    def _invalid(self, why: str) -> AuthRefusal:
        challenge = (
            f'Bearer error="invalid_token", error_description={_quoted(why)}, '
            f"resource_metadata={_quoted(self.metadata_url)}"
        )
        return AuthRefusal(
            401,
            [_JSON, ("www-authenticate", challenge)],
            _wire.encode_error(
                None,
                INVALID_REQUEST,
                f"Unauthorized: {why}",
                {"error": "invalid_token", "error_description": why},
            ),
        )

    def _malformed(self, why: str) -> AuthRefusal:
        challenge = (
            f'Bearer error="invalid_request", error_description={_quoted(why)}, '
            f"resource_metadata={_quoted(self.metadata_url)}"
        )
        return AuthRefusal(
            400,
            [_JSON, ("www-authenticate", challenge)],
            _wire.encode_error(None, INVALID_REQUEST, f"Bad request: {why}"),
        )

    def insufficient_scope(self, needed: Iterable[str]) -> AuthRefusal:
        """The 403 that asks the client to come back with a token carrying ``needed``
        (besides what every request needs)."""
        scope = " ".join(sorted(set(needed) | self.required_scopes))
        why = f"this request needs the scope {scope}"
        challenge = (
            f'Bearer error="insufficient_scope", scope={_quoted(scope)}, '
            f"resource_metadata={_quoted(self.metadata_url)}, error_description={_quoted(why)}"
        )
        return AuthRefusal(
            403,
            [_JSON, ("www-authenticate", challenge)],
            _wire.encode_error(
                None,
                INVALID_REQUEST,
                f"Forbidden: {why}",
                {"error": "insufficient_scope", "scope": scope},
            ),
        )


__all__ = ["WELL_KNOWN", "AuthRefusal", "BearerGuard", "metadata_url"]
