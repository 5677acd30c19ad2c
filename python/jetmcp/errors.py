"""JSON-RPC error codes and the one exception class that carries them."""

from __future__ import annotations

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
#: A server-to-client request that got no answer in time (implementation range).
REQUEST_TIMEOUT = -32001
URL_ELICITATION_REQUIRED = -32042
HEADER_MISMATCH = -32020
MISSING_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022

_UNSET: Any = object()


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
