"""JSON documents from an authorization server (its metadata, JWKS, introspection answers),
over jetmcp's own HTTP/1.1 client: the runtime needs no HTTP library for auth either.

Each origin keeps one pool of keep-alive connections. A fetch is bounded in time and size,
and anything but a 200 JSON object is an :class:`AuthUnavailable`: the server cannot tell
whether a token is good while its authorization server answers nonsense.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlencode

import orjson

from jetmcp.client.transports import HttpPool, TransportClosed, Url, header_fields
from jetmcp.core.principal import AuthUnavailable

#: Seconds one fetch may take, connection included.
FETCH_TIMEOUT_SECONDS = 10.0
#: Largest document read from an authorization server (a JWKS of many keys fits easily).
MAX_DOCUMENT_BYTES = 1024 * 1024


class Fetcher:
    """Fetches JSON documents, keeping a pool of connections per origin (one fetcher per
    verifier: its connections belong to the event loop that serves it)."""

    __slots__ = ("_loop", "_pools")

    def __init__(self) -> None:
        self._pools: dict[tuple[str, str, int], HttpPool] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def _pool(self, url: Url) -> HttpPool:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            # Connections belong to the loop that opened them; a new loop starts afresh.
            self._pools = {}
            self._loop = loop
        key = (url.scheme, url.host, url.port)
        pool = self._pools.get(key)
        if pool is None:
            pool = self._pools[key] = HttpPool(url, connect_timeout=FETCH_TIMEOUT_SECONDS)
        return pool

    def close(self) -> None:
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()

    async def json(
        self,
        url: str,
        *,
        form: dict[str, str] | None = None,
        headers: list[tuple[str, str]] | None = None,
    ) -> dict[str, Any]:
        """GET ``url`` (POST ``form`` url-encoded when given) and return its JSON object."""
        return await _fetch(self._pool, url, form, headers)


async def _fetch(
    pool_of: Any,
    url: str,
    form: dict[str, str] | None,
    headers: list[tuple[str, str]] | None,
) -> dict[str, Any]:
    try:
        target = Url.parse(url)
    except ValueError as exc:
        raise AuthUnavailable(str(exc)) from None
    body = urlencode(form).encode() if form is not None else None
    extra = [("host", target.authority), ("accept", "application/json")]
    if form is not None:
        extra.append(("content-type", "application/x-www-form-urlencoded"))
    method = b"POST" if form is not None else b"GET"
    try:
        fields = header_fields([*extra, *(headers or [])])
    except ValueError as exc:
        raise AuthUnavailable(str(exc)) from None
    try:
        async with asyncio.timeout(FETCH_TIMEOUT_SECONDS):
            response = await pool_of(target).request(
                method, fields, body, target.target.encode("latin-1")
            )
            try:
                data = bytearray()
                async for chunk in response.chunks():
                    data += chunk
                    if len(data) > MAX_DOCUMENT_BYTES:
                        response.abort()
                        raise AuthUnavailable(f"{url} sent more than {MAX_DOCUMENT_BYTES} bytes")
            finally:
                response.release()
    except TimeoutError:
        raise AuthUnavailable(f"{url} did not answer in {FETCH_TIMEOUT_SECONDS:g} s") from None
    except (OSError, TransportClosed) as exc:
        raise AuthUnavailable(f"{url} cannot be reached: {exc}") from None
    if response.status != 200:
        raise AuthUnavailable(f"{url} answered HTTP {response.status}")
    try:
        document = orjson.loads(bytes(data))
    except orjson.JSONDecodeError:
        raise AuthUnavailable(f"{url} did not answer JSON") from None
    if not isinstance(document, dict):
        raise AuthUnavailable(f"{url} did not answer a JSON object")
    return document


__all__ = ["FETCH_TIMEOUT_SECONDS", "MAX_DOCUMENT_BYTES", "Fetcher"]
