"""Sealing the 2026-07-28 ``requestState``: what a multi-round request carries between rounds.

The client echoes ``requestState`` verbatim, so it is attacker-controlled. jetmcp seals it
with HMAC-SHA256: a token is ``v1.<payload>.<tag>``, both parts unpadded base64url, the
payload compact JSON of

- ``m``: the method, and ``d``: a digest of the request's params (without ``inputResponses``,
  ``requestState`` and ``_meta``), so a token only works for the request that minted it;
- ``exp``: when it stops being accepted (unix seconds; ten minutes by default);
- ``a``: the answers gathered in earlier rounds, and ``s``: the handler's own state
  (:attr:`jetmcp.server.Context.request_state`).

The token is signed, not encrypted: the client can read what it carries (answers it gave
itself, and whatever the handler puts in its state), so keep secrets out of it.

The key: ``Server(state_key=...)``, else the ``JETMCP_STATE_KEY`` environment variable, else
the ``state_key`` of the exported settings (``jetmcp run`` draws one per run and hands it to
every Granian worker), else one drawn for this process. Servers scaled out over several hosts
must share it through configuration, or a retry landing on another host is refused.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import logging
import os
import secrets
import time
from typing import Any, NoReturn

import orjson

from jetmcp.errors import INVALID_PARAMS, McpError

log = logging.getLogger("jetmcp")

#: Where the key comes from when the server is given none.
STATE_KEY_ENV = "JETMCP_STATE_KEY"
#: Params that are not part of what a token is bound to: they change from round to round.
UNBOUND_PARAMS = frozenset({"inputResponses", "requestState", "_meta"})
DEFAULT_TTL_SECONDS = 600.0
_PREFIX = "v1."
_VERSION = 1


def _b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64u(text: str) -> bytes:
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if _b64u(raw) != text:
        raise ValueError("not canonical base64url")
    return raw


def params_digest(params: dict[str, Any], principal: str | None = None) -> str:
    """What a token is bound to: the params minus the round-to-round fields, canonically,
    and the key of the principal that made the request (when auth is on)."""
    bound: Any = {k: v for k, v in params.items() if k not in UNBOUND_PARAMS}
    if principal is not None:
        bound = [bound, principal]
    try:
        canonical = orjson.dumps(bound, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        # An integer beyond 64 bits (orjson refuses those): the standard library's JSON.
        canonical = json.dumps(bound, sort_keys=True, separators=(",", ":")).encode()
    return _b64u(hashlib.sha256(canonical).digest()[:18])


def _key_from_settings() -> str | None:
    raw = os.environ.get("JETMCP_SETTINGS")
    if not raw:
        return None
    try:
        value = json.loads(raw).get("state_key")
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, str) and value else None


def resolve_key(explicit: str | bytes | None = None) -> bytes:
    """The sealing key: the one given, ``JETMCP_STATE_KEY``, the exported settings', or new."""
    if explicit:
        return explicit.encode() if isinstance(explicit, str) else bytes(explicit)
    configured = os.environ.get(STATE_KEY_ENV) or _key_from_settings()
    if configured:
        return configured.encode()
    return secrets.token_bytes(32)


class InvalidRequestState(McpError):
    """A ``requestState`` that was tampered with, has expired, or belongs to another request.

    The wire message is always the same; the reason goes to the server log only."""

    def __init__(self) -> None:
        super().__init__(INVALID_PARAMS, "Invalid params: invalid or expired requestState")


class StateSealer:
    """Seals and opens ``requestState`` tokens with one key."""

    __slots__ = ("_explicit", "_key", "ttl")

    def __init__(self, key: str | bytes | None = None, ttl: float = DEFAULT_TTL_SECONDS) -> None:
        if ttl <= 0:
            raise ValueError("the requestState ttl must be positive")
        self._explicit = key
        #: Resolved at first use, so environment set after the server was built still counts.
        self._key: bytes | None = None
        self.ttl = ttl

    @property
    def key(self) -> bytes:
        if self._key is None:
            self._key = resolve_key(self._explicit)
        return self._key

    def _tag(self, body: str) -> str:
        return _b64u(hmac.new(self.key, body.encode("ascii"), hashlib.sha256).digest())

    def seal(self, method: str, digest: str, answers: dict[str, Any], state: dict[str, Any]) -> str:
        claims: dict[str, Any] = {
            "v": _VERSION,
            "m": method,
            "d": digest,
            "exp": round(time.time() + self.ttl, 3),
            "a": answers,
            "s": state,
        }
        body = _PREFIX + _b64u(orjson.dumps(claims))
        return f"{body}.{self._tag(body)}"

    def open(
        self, token: object, method: str, digest: str
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """(answers, state) from a token minted for this method and params; raises
        :class:`InvalidRequestState` otherwise."""
        if not isinstance(token, str) or not token.startswith(_PREFIX):
            _reject(method, "malformed")
        body, dot, tag = token.rpartition(".")
        if not dot or not hmac.compare_digest(tag.encode(), self._tag(body).encode()):
            _reject(method, "bad seal")
        try:
            claims = orjson.loads(_unb64u(body[len(_PREFIX) :]))
        except (ValueError, binascii.Error, orjson.JSONDecodeError):
            _reject(method, "malformed payload")
        if not isinstance(claims, dict) or claims.get("v") != _VERSION:
            _reject(method, "unknown version")
        expires = claims.get("exp")
        if not isinstance(expires, int | float) or not time.time() < expires:
            _reject(method, "expired")
        if claims.get("m") != method or claims.get("d") != digest:
            _reject(method, "minted for another request")
        answers, state = claims.get("a"), claims.get("s")
        if not isinstance(answers, dict) or not isinstance(state, dict):
            _reject(method, "malformed payload")
        return answers, state


def _reject(method: str, reason: str) -> NoReturn:
    log.info("requestState refused on %s: %s", method, reason)
    raise InvalidRequestState()


__all__ = [
    "DEFAULT_TTL_SECONDS",
    "STATE_KEY_ENV",
    "InvalidRequestState",
    "StateSealer",
    "params_digest",
    "resolve_key",
]
