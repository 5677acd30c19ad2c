"""Who sent a request: the :class:`Principal` a bearer token stands for, and the
:class:`TokenVerifier` protocol that turns a token into one.

A principal is what the server binds state to (sessions, event logs, tasks): two requests
are the same principal's when their tokens name the same issuer, subject and client. The
raw token travels with the principal for handlers that must exchange it (RFC 8693), but it
is never part of its ``repr``, its equality or its :attr:`Principal.key`, so logging a
principal never logs a credential.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import orjson


class InvalidToken(Exception):
    """The token cannot be accepted (expired, wrong audience, bad signature...): HTTP 401
    with ``error="invalid_token"``. Its message is sent to the client as
    ``error_description``, so it names the rule broken and nothing of the server."""


class AuthUnavailable(Exception):
    """The token could not be checked now (the authorization server or its JWKS cannot be
    reached): HTTP 503 with ``Retry-After``; the token may well be valid."""


@dataclass(frozen=True, slots=True)
class Principal:
    """The verified identity behind a request (``ctx.auth`` in a handler)."""

    #: ``sub``: the resource owner (unique per issuer); None for a client acting for itself.
    subject: str | None
    #: The scopes the token grants.
    scopes: frozenset[str] = frozenset()
    #: ``client_id`` (or ``azp``): the OAuth client the token was issued to.
    client_id: str | None = None
    #: ``iss``: the authorization server that issued the token.
    issuer: str | None = None
    #: Every verified claim of the token (a JWT's payload, an introspection response).
    claims: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    #: When the token expires (unix seconds), when it says.
    expires_at: float | None = None
    #: The bearer token itself. Never logged, never compared; do not pass it on to another
    #: service (that is the token passthrough the MCP spec forbids): exchange it instead.
    token: str = field(default="", repr=False, compare=False)
    #: A digest of (issuer, subject, client): what sessions, tasks and streams are bound to.
    key: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        ident = orjson.dumps([self.issuer, self.subject, self.client_id])
        object.__setattr__(self, "key", hashlib.sha256(ident).hexdigest()[:32])

    def has_scopes(self, needed: frozenset[str] | set[str] | tuple[str, ...]) -> bool:
        """Whether every scope in ``needed`` is granted."""
        return self.scopes.issuperset(needed)


@runtime_checkable
class TokenVerifier(Protocol):
    """Turns a bearer token into a :class:`Principal`.

    Return None (or raise :class:`InvalidToken` with a reason) for a token that must be
    refused; raise :class:`AuthUnavailable` when it cannot be checked right now. The
    official SDK's verifiers (``verify_token`` returning an ``AccessToken``) fit too: see
    :func:`as_principal`. A verifier must check that the token was issued for this server
    (its audience): jetmcp's own do."""

    async def verify_token(self, token: str) -> Any: ...


def scopes_of(value: Any) -> frozenset[str]:
    """Scopes from a space-separated ``scope`` string or a list of strings (``scp``)."""
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, list | tuple | set | frozenset):
        return frozenset(s for s in value if isinstance(s, str))
    return frozenset()


def as_principal(value: Any, token: str) -> Principal | None:
    """A verifier's answer as a :class:`Principal`: one already, None, or the official SDK's
    ``AccessToken`` (``client_id``, ``scopes``, ``expires_at``, ``subject``, ``claims``)."""
    if value is None or isinstance(value, Principal):
        return value
    scopes = getattr(value, "scopes", None)
    client_id = getattr(value, "client_id", None)
    if scopes is None and client_id is None:
        raise TypeError(
            f"a token verifier returned {type(value).__name__}: expected a jetmcp Principal, "
            "the SDK's AccessToken, or None"
        )
    raw_claims = getattr(value, "claims", None)
    claims: dict[str, Any] = dict(raw_claims) if isinstance(raw_claims, Mapping) else {}
    issuer = claims.get("iss")
    expires = getattr(value, "expires_at", None)
    subject = getattr(value, "subject", None)
    return Principal(
        subject=subject if isinstance(subject, str) else None,
        scopes=scopes_of(list(scopes) if scopes is not None else []),
        client_id=client_id if isinstance(client_id, str) else None,
        issuer=issuer if isinstance(issuer, str) else None,
        claims=claims,
        expires_at=float(expires) if isinstance(expires, int | float) else None,
        token=token,
    )


__all__ = [
    "AuthUnavailable",
    "InvalidToken",
    "Principal",
    "TokenVerifier",
    "as_principal",
    "scopes_of",
]
