"""JSON-RPC error codes and the one exception class that carries them."""

from __future__ import annotations

import logging
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002
#: Answers an HTTP request the client cancelled (stdio sends nothing instead). The code is
#: the one LSP uses; MCP defines none, and this one is outside the ranges MCP reserves.
REQUEST_CANCELLED = -32800
#: A request that did not finish in time: a server-to-client request the client left
#: unanswered, or a client request past its deadline (``--request-timeout-seconds``, a tool's
#: ``timeout``). Both official SDKs already use -32001 for "request timed out" (TypeScript
#: ``ErrorCode.RequestTimeout``, Python ``mcp.types.REQUEST_TIMEOUT``), in the implementation
#: range that 2026-07-28 keeps for the codes in use before it, so clients read it right.
REQUEST_TIMEOUT = -32001
#: The server cannot take or finish a request for a reason of its own, not the request's:
#: too many requests in flight, or it is shutting down. Retrying later (or elsewhere) may
#: succeed. -32000 is the generic code of JSON-RPC's implementation-defined server-error
#: range; 2026-07-28 asks for no new codes there, so none is made up.
SERVER_ERROR = -32000
URL_ELICITATION_REQUIRED = -32042
HEADER_MISMATCH = -32020
MISSING_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022

_UNSET: Any = object()
log = logging.getLogger("jetmcp")


class McpError(Exception):
    """A JSON-RPC error: raised by handlers (server side) and by the client for error replies."""

    def __init__(self, code: int, message: str, data: Any = _UNSET) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    @property
    def has_data(self) -> bool:
        return self.data is not _UNSET

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.has_data:
            out["data"] = self.data
        return out

    def __repr__(self) -> str:
        return f"McpError({self.code}, {self.message!r})"


class UrlElicitationError(McpError):
    """The -32042 error (URL elicitation required) with its elicitations in wire form; raised
    as :class:`~jetmcp.server.elicitation.UrlElicitationRequired`, which builds them. Revisions
    before 2025-11-25 have no such error: a tool call then answers with :meth:`as_text`."""

    def __init__(self, elicitations: list[dict[str, Any]], message: str) -> None:
        super().__init__(URL_ELICITATION_REQUIRED, message, {"elicitations": elicitations})
        self.elicitations = elicitations

    def as_text(self) -> str:
        """The error as prose, for revisions without URL elicitation."""
        lines = [self.message]
        lines += [f"- {item['message']}: {item['url']}" for item in self.elicitations]
        return "\n".join(lines)


class LoadError(Exception):
    """A ``jetmcp run`` target that names no server, or a server that cannot be served as it
    is (auth jetmcp cannot honour); the message is one line for the user."""


class ToolError(Exception):
    """Raised by a tool to fail with this text shown to the client (an ``isError`` result),
    even where unexpected exceptions are masked. The official SDK's and fastmcp's
    ``ToolError`` are honoured the same way."""


def from_sdk_error(exc: BaseException) -> McpError | None:
    """The :class:`McpError` an official-SDK error carries (``McpError`` of 1.x,
    ``MCPError`` of 2.x and their subclasses such as ``UrlElicitationRequiredError``), or
    None for any other exception. Recognized by shape (``exc.error`` with ``code`` and
    ``message``), so no SDK is imported."""
    error = getattr(exc, "error", None)
    code = getattr(error, "code", None)
    message = getattr(error, "message", None)
    if not isinstance(code, int) or not isinstance(message, str):
        return None
    if not any(c.__name__ in ("McpError", "MCPError") for c in type(exc).__mro__):
        return None
    data = getattr(error, "data", None)
    return McpError(code, message) if data is None else McpError(code, message, data)


def is_tool_error(exc: BaseException) -> bool:
    """Whether ``exc`` is a ``ToolError`` (jetmcp's, the SDK's or fastmcp's)."""
    return any(c.__name__ == "ToolError" for c in type(exc).__mro__)


#: Exceptions whose text is meant for the client (the SDK's and fastmcp's), shown even where
#: unexpected exceptions are masked.
_SHOWN = frozenset({"ToolError", "ResourceError", "PromptError"})


def internal_error(what: str, exc: BaseException, mask: bool, data: Any = _UNSET) -> McpError:
    """The -32603 for an exception user code raised unexpectedly while doing ``what``
    ("Error reading resource URI"...): ``what`` alone when ``mask`` (the default of
    ``Server(mask_error_details=True)``: file paths, queries, secrets in an exception's text
    must not reach the client; the log gets all of it, traceback included), ``what: text``
    otherwise, and always for the exceptions meant to be shown (``ResourceError``...)."""
    shown = any(c.__name__ in _SHOWN for c in type(exc).__mro__)
    if mask and not shown:
        log.error("%s", what, exc_info=exc)
        return McpError(INTERNAL_ERROR, what, data)
    text = str(exc) or type(exc).__name__
    return McpError(INTERNAL_ERROR, f"{what}: {text}", data)
