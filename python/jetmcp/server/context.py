"""``Context``: what a tool, resource or prompt function sees of the request it serves.

A function gets one by declaring a parameter annotated ``Context`` (jetmcp's, or the official
SDK's / fastmcp's ``Context`` type: any class named ``Context`` is recognized). It is created
per call, only for functions that ask for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jetmcp.call import LOG_RANK, Call
from jetmcp.protocol.revisions import Revision

if TYPE_CHECKING:
    from jetmcp.server.app import Server


@dataclass(frozen=True, slots=True)
class ResourceContents:
    """One item read by :meth:`Context.read_resource` (the SDK's ``ReadResourceContents``)."""

    content: str | bytes
    mime_type: str | None
    meta: dict[str, Any] | None = None


class Context:
    """The request being served, and the means to talk back to its client.

    Notifications (progress, log messages) go out on the request's own stream; where the
    transport cannot carry them (a plain JSON reply) they are dropped.
    """

    __slots__ = ("_call", "_server")

    def __init__(self, call: Call, server: Server | None = None) -> None:
        self._call = call
        self._server = server

    # -- the request ------------------------------------------------------------------------

    @property
    def call(self) -> Call:
        """The underlying :class:`jetmcp.call.Call`."""
        return self._call

    @property
    def server(self) -> Server:
        """The :class:`jetmcp.Server` serving this request."""
        if self._server is None:
            raise RuntimeError("this Context is not bound to a Server")
        return self._server

    @property
    def request_id(self) -> str:
        """The JSON-RPC id of the request, as a string (as the official SDK gives it)."""
        return str(self._call.request_id)

    @property
    def session_id(self) -> str | None:
        """The session id, or None when the request is not part of a session."""
        session = self._call.session
        return session.id if session is not None else None

    @property
    def revision(self) -> Revision:
        """The protocol revision this request is served under."""
        return self._call.revision

    @property
    def protocol_version(self) -> str:
        return self._call.revision.version

    @property
    def meta(self) -> dict[str, Any]:
        """The request's ``params._meta`` (empty when absent)."""
        return self._call.meta if self._call.meta is not None else {}

    @property
    def progress_token(self) -> Any:
        """The request's ``progressToken``, or None when it did not ask for progress."""
        return self._call.progress_token

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """The capabilities the client declared."""
        return self._call.client_capabilities

    @property
    def client_info(self) -> dict[str, Any]:
        """The client's ``clientInfo`` (name, version, ...) from ``initialize``; may be empty."""
        session = self._call.session
        return session.client_info if session is not None else {}

    @property
    def client_params(self) -> dict[str, Any]:
        """What the client told the server about itself, shaped like ``initialize`` params:
        ``protocolVersion``, ``capabilities``, ``clientInfo``."""
        return {
            "protocolVersion": self._call.revision.version,
            "capabilities": self.client_capabilities,
            "clientInfo": self.client_info,
        }

    # -- notifications ----------------------------------------------------------------------

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress`` for this request.

        Does nothing when the request carried no ``progressToken``. ``message`` is dropped on
        revisions without progress messages (2024-11-05).
        """
        token = self._call.progress_token
        if token is None:
            return
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None and self._call.revision.progress_message:
            params["message"] = message
        await self._call.notify("notifications/progress", params)

    async def log(self, level: str, data: Any, *, logger_name: str | None = None) -> None:
        """Send ``notifications/message`` at ``level`` (a syslog level: debug, info, notice,
        warning, error, critical, alert, emergency), unless the client asked for less."""
        if level not in LOG_RANK:
            raise ValueError(f"unknown log level {level!r}")
        if not self._call.wants_log(level):
            return
        params: dict[str, Any] = {"level": level}
        if logger_name is not None:
            params["logger"] = logger_name
        params["data"] = data
        await self._call.notify("notifications/message", params)

    async def debug(self, data: Any, *, logger_name: str | None = None) -> None:
        await self.log("debug", data, logger_name=logger_name)

    async def info(self, data: Any, *, logger_name: str | None = None) -> None:
        await self.log("info", data, logger_name=logger_name)

    async def warning(self, data: Any, *, logger_name: str | None = None) -> None:
        await self.log("warning", data, logger_name=logger_name)

    async def error(self, data: Any, *, logger_name: str | None = None) -> None:
        await self.log("error", data, logger_name=logger_name)

    # -- the server's own features ----------------------------------------------------------

    async def read_resource(self, uri: str) -> list[ResourceContents]:
        """Read one of this server's resources (raises ``McpError`` when there is none)."""
        return await self.server.read_resource_contents(str(uri), self._call)


__all__ = ["Context", "ResourceContents"]
