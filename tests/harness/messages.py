"""The one JSON-RPC message builder: requests, notifications and ``initialize`` at every
revision, the ``_meta`` a 2026-07-28 request carries, the HTTP headers a message is sent
with, and the checks of a reply's shape.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

#: Every legacy revision, oldest first, and the two halves of seed 000's table.
REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
BATCHING = ("2024-11-05", "2025-03-26")
NO_BATCHING = ("2025-06-18", "2025-11-25")
#: The revision of an HTTP request with neither session nor header, and of stdio before
#: ``initialize``.
DEFAULT_REVISION = "2025-03-26"
MAX_SAFE = 2**53 - 1

#: The 2026-07-28 revision and the ``_meta`` keys its requests carry.
MODERN = "2026-07-28"
META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"

#: What ``Mcp-Name`` repeats, per 2026-07-28 method.
NAME_PARAMS = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}


_counter = itertools.count(1)


def unique_id(prefix: str = "r") -> str:
    return f"{prefix}{next(_counter)}"


def encode(body: Any) -> bytes:
    """Bytes are sent as they are; anything else is compact JSON."""
    if isinstance(body, bytes):
        return body
    return json.dumps(body, separators=(",", ":")).encode()


def request(method: str, params: dict[str, Any] | None = None, id: Any = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": unique_id() if id is None else id}
    msg["method"] = method
    if params is not None:
        msg["params"] = params
    return msg


def notification(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def initialize_request(
    version: str,
    id: Any = None,
    *,
    capabilities: dict[str, Any] | None = None,
    client_name: str = "jetmcp-tests",
) -> dict[str, Any]:
    """``initialize`` at ``version``: no client capabilities unless given."""
    return request(
        "initialize",
        {
            "protocolVersion": version,
            "capabilities": capabilities if capabilities is not None else {},
            "clientInfo": {"name": client_name, "version": "0"},
        },
        id=id,
    )


def tool_call(
    name: str,
    arguments: dict[str, Any] | None = None,
    id: Any = None,
    *,
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``tools/call`` of ``name`` (no arguments unless given; ``_meta`` when given)."""
    params: dict[str, Any] = {"name": name, "arguments": arguments if arguments is not None else {}}
    if meta is not None:
        params["_meta"] = meta
    return request("tools/call", params, id=id)


def modern_meta(
    version: str = MODERN, capabilities: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    """The ``_meta`` every 2026-07-28 request carries (``extra`` adds keys)."""
    meta: dict[str, Any] = {
        META_PROTOCOL_VERSION: version,
        META_CLIENT_CAPABILITIES: capabilities if capabilities is not None else {},
        META_CLIENT_INFO: {"name": "jetmcp-tests", "version": "0"},
    }
    meta.update(extra)
    return meta


def modern_request(
    method: str,
    params: dict[str, Any] | None = None,
    id: Any = None,
    *,
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A 2026-07-28 request: ``params`` with ``_meta`` (``modern_meta()`` unless given)."""
    body = dict(params or {})
    body["_meta"] = meta if meta is not None else modern_meta()
    return request(method, body, id=id)


def assert_error(msg: dict[str, Any], code: int, id: Any = None) -> None:
    assert msg.get("jsonrpc") == "2.0", msg
    assert "error" in msg and "result" not in msg, msg
    assert msg["error"]["code"] == code, msg
    assert isinstance(msg["error"]["message"], str)
    assert msg["id"] == id, msg


def assert_result(msg: dict[str, Any], id: Any) -> dict[str, Any]:
    assert msg.get("jsonrpc") == "2.0", msg
    assert "error" not in msg, msg
    assert msg["id"] == id, msg
    result = msg["result"]
    assert isinstance(result, dict)
    return result


def tool_text(result: dict[str, Any]) -> str:
    return "".join(c["text"] for c in result["content"] if c.get("type") == "text")


def json_headers(
    version: str | None = None,
    session: str | None = None,
    **extra: str,
) -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    if version is not None:
        headers["MCP-Protocol-Version"] = version
    if session is not None:
        headers["Mcp-Session-Id"] = session
    headers.update(extra)
    return headers


def modern_headers(
    method: str | None = None, name: str | None = None, version: str = MODERN, **extra: str
) -> dict[str, str]:
    """The HTTP headers of a 2026-07-28 request (``Mcp-Method``/``Mcp-Name`` when given)."""
    headers = json_headers(version)
    if method is not None:
        headers["Mcp-Method"] = method
    if name is not None:
        headers["Mcp-Name"] = name
    headers.update(extra)
    return headers


def modern_routing(body: Any) -> dict[str, str]:
    """The ``Mcp-Method``/``Mcp-Name`` headers a 2026-07-28 client derives from a single
    message (none for a batch or a message without a method)."""
    if not isinstance(body, dict) or not isinstance(body.get("method"), str):
        return {}
    headers = {"Mcp-Method": body["method"]}
    field = NAME_PARAMS.get(body["method"])
    value = (body.get("params") or {}).get(field) if field else None
    if isinstance(value, str):
        headers["Mcp-Name"] = value
    return headers
