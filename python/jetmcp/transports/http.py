"""Streamable HTTP, as an RSGI application that Granian serves.

The transport owns status codes, headers and sessions; what a body means is the
dispatcher's business. It hands the raw body to the parser untouched.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit

from jetmcp import _wire
from jetmcp.dispatch import Dispatcher, Exchange
from jetmcp.errors import INVALID_REQUEST
from jetmcp.protocol import revisions
from jetmcp.server.app import Server
from jetmcp.sessions import MemorySessionStore, SessionStore, new_session_id
from jetmcp.settings import Settings

log = logging.getLogger("jetmcp.http")

_JSON = [("content-type", "application/json")]
_decode = _wire.decode
_encode_error = _wire.encode_error


class HttpError(Exception):
    """Ends a request early with a status and an id-less JSON-RPC error body."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def _accepts(accept: str | None) -> bool:
    if accept is None:
        return True
    for part in accept.split(","):
        media = part.split(";", 1)[0].strip().lower()
        if media in ("application/json", "text/event-stream", "*/*", "application/*", "text/*"):
            return True
    return False


_LOCAL = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


def _hostname(netloc: str) -> str:
    """The host part of ``host[:port]`` (IPv6 literals keep no brackets), lower-cased."""
    netloc = netloc.strip().lower()
    if netloc.startswith("["):
        return netloc[1 : netloc.find("]")] if "]" in netloc else netloc
    return netloc.rsplit(":", 1)[0] if netloc.count(":") == 1 else netloc


def _remember(seen: set[str], value: str) -> None:
    # Bounded, so a client cycling through Host values cannot grow it without end.
    if len(seen) < 1024:
        seen.add(value)


def _is_json(content_type: str | None) -> bool:
    if content_type is None:
        return False
    return content_type.split(";", 1)[0].strip().lower() == "application/json"


class McpHttpApp:
    """One MCP endpoint over Streamable HTTP for every legacy revision."""

    def __init__(
        self,
        server: Server,
        settings: Settings | None = None,
        store: SessionStore | None = None,
    ) -> None:
        self.settings = settings or Settings()
        self.server = server
        self.dispatcher = Dispatcher(server)
        self.store: SessionStore = store or MemorySessionStore(
            self.settings.max_sessions, self.settings.session_idle_seconds
        )
        self.path = self.settings.path
        self._origins_extra = set(self.settings.allowed_origins)
        self._hosts_extra = {_hostname(h) for h in self.settings.allowed_hosts} | set(
            self.settings.allowed_hosts
        )
        bound = self.settings.host
        if bound not in ("0.0.0.0", "::", ""):
            self._hosts_extra.add(_hostname(bound))
        # Values already judged acceptable: the check costs a set lookup per request.
        self._origins_ok: set[str] = set()
        self._hosts_ok: set[str] = set()

    # RSGI entry point -------------------------------------------------------

    async def __rsgi__(self, scope: Any, proto: Any) -> None:
        if scope.proto != "http":
            return
        headers = scope.headers
        refusal = self._check_origin(headers.get("origin"), headers.get("host"))
        if refusal is not None:
            proto.response_bytes(403, _JSON, _encode_error(None, INVALID_REQUEST, refusal))
            return
        if scope.path != self.path:
            proto.response_bytes(404, _JSON, _encode_error(None, INVALID_REQUEST, "Not found"))
            return
        try:
            method = scope.method
            if method == "POST":
                await self._post(scope, proto)
            elif method == "DELETE":
                await self._delete(scope, proto)
            else:
                proto.response_bytes(
                    405,
                    [*_JSON, ("allow", "POST, DELETE")],
                    _encode_error(None, INVALID_REQUEST, f"Method not allowed: {method}"),
                )
        except HttpError as exc:
            proto.response_bytes(exc.status, _JSON, _encode_error(None, exc.code, exc.message))

    def __rsgi_init__(self, loop: Any) -> None:
        return None

    def _check_origin(self, origin: str | None, host: str | None) -> str | None:
        """DNS-rebinding protection: why the request is refused (403), or None."""
        if origin is not None and origin not in self._origins_ok:
            if not self._origin_allowed(origin):
                return f"Origin not allowed: {origin}"
            _remember(self._origins_ok, origin)
        if host is not None and host not in self._hosts_ok:
            if not self._host_allowed(host):
                return f"Host not allowed: {host}"
            _remember(self._hosts_ok, host)
        return None

    def _origin_allowed(self, origin: str) -> bool:
        extra = self._origins_extra
        if origin in extra or "*" in extra:
            return True
        return _hostname(urlsplit(origin).netloc) in _LOCAL

    def _host_allowed(self, host: str) -> bool:
        extra = self._hosts_extra
        return host in extra or "*" in extra or _hostname(host) in _LOCAL | extra

    # POST -------------------------------------------------------------------

    async def _read_body(self, headers: Any, proto: Any) -> bytes:
        limit = self.settings.max_body_bytes
        length = headers.get("content-length")
        if length is not None:
            try:
                size = int(length)
            except ValueError:
                raise HttpError(400, INVALID_REQUEST, "Invalid Content-Length") from None
            if size > limit:
                raise HttpError(413, INVALID_REQUEST, f"Body exceeds {limit} bytes")
            body: bytes = await proto()
            return body
        chunks: list[bytes] = []
        total = 0
        async for chunk in proto:
            total += len(chunk)
            if total > limit:
                raise HttpError(413, INVALID_REQUEST, f"Body exceeds {limit} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    async def _post(self, scope: Any, proto: Any) -> None:
        headers = scope.headers
        if not _is_json(headers.get("content-type")):
            raise HttpError(415, INVALID_REQUEST, "Content-Type must be application/json")
        if not _accepts(headers.get("accept")):
            raise HttpError(
                406, INVALID_REQUEST, "Not Acceptable: accept application/json or text/event-stream"
            )
        body = await self._read_body(headers, proto)
        settings = self.settings

        session = None
        session_id = None if settings.stateless else headers.get("mcp-session-id")
        if session_id is not None:
            session = await self.store.get(session_id)
            if session is None:
                raise HttpError(404, INVALID_REQUEST, "Session not found")

        version = headers.get("mcp-protocol-version")
        if version is not None:
            header_rev = revisions.lookup(version.strip())
            if header_rev is None:
                raise HttpError(400, INVALID_REQUEST, f"Unsupported protocol version: {version}")
            if session is not None and header_rev is not session.revision:
                raise HttpError(
                    400,
                    INVALID_REQUEST,
                    f"MCP-Protocol-Version {version} does not match the session's "
                    f"{session.revision.version}",
                )
            revision = header_rev
        elif session is not None:
            revision = session.revision
        else:
            revision = revisions.HTTP_DEFAULT

        frame = _decode(body, settings.max_depth, settings.max_batch)
        if (
            session is None
            and settings.require_session
            and not settings.stateless
            and not _is_initialize(frame)
        ):
            raise HttpError(400, INVALID_REQUEST, "Missing Mcp-Session-Id header")

        ex = Exchange(
            revision,
            session,
            inflight=self.store.inflight(session_id) if session_id is not None else None,
            answer_cancelled=True,
        )
        reply = await self.dispatcher.dispatch(frame, ex)
        out_headers = _JSON
        new = ex.new_session
        if new is not None and not settings.stateless:
            new.id = new_session_id()
            await self.store.add(new)
            out_headers = [*_JSON, ("mcp-session-id", new.id)]
        if reply is None:
            proto.response_empty(202, [])
            return
        proto.response_bytes(ex.http_status, out_headers, reply)

    # DELETE -----------------------------------------------------------------

    async def _delete(self, scope: Any, proto: Any) -> None:
        session_id = scope.headers.get("mcp-session-id")
        if session_id is None or self.settings.stateless:
            raise HttpError(400, INVALID_REQUEST, "Missing Mcp-Session-Id header")
        if not await self.store.remove(session_id):
            raise HttpError(404, INVALID_REQUEST, "Session not found")
        proto.response_empty(204, [])


def _is_initialize(frame: _wire.Frame) -> bool:
    return (
        frame.kind == _wire.FRAME_SINGLE
        and frame.entries[0].kind == _wire.REQUEST
        and frame.entries[0].method == "initialize"
    )


def app_from_env() -> McpHttpApp:
    """Granian's factory target: builds the app in each worker from exported settings."""
    from jetmcp.cli import load_app

    settings = Settings.from_env()
    return McpHttpApp(load_app(settings.app), settings)
