"""Pre-flight: a plain-Python HTTP check that a server really answers before it is loaded.

Each check sends the very bytes the load generator will send and looks at what comes back:
``tools/call add(1, 2)`` must answer content text ``"3"``, ``tools/list`` must list ``add``,
and a batch of 10 at 2025-03-26 is either accepted (10 correct replies) or refused (the HTTP
status and JSON-RPC error are kept for the report).
"""

from __future__ import annotations

import http.client
import json
import socket
import time
from dataclasses import dataclass, field
from typing import Any

from bodies import (
    BATCH_CALL,
    BATCH_PROTOCOL_VERSION,
    BATCH_SIZE,
    SINGLE_PROTOCOL_VERSION,
    TOOLS_CALL,
    TOOLS_LIST,
)

#: Where an MCP endpoint may live; the first that does not answer 404/405/3xx wins.
CANDIDATE_PATHS = ("/mcp", "/mcp/", "/")


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes
    #: The JSON-RPC payload (an SSE stream is unwrapped to its first data event), or None.
    payload: Any = None


@dataclass
class Endpoint:
    """How to reach a server that passed the tools/call check."""

    port: int
    path: str
    #: Extra headers every request needs (only a session id, for a server that insists on
    #: initialize even in stateless mode).
    headers: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def wait_for_port(port: int, timeout: float, alive: Any) -> bool:
    """Poll until something accepts on 127.0.0.1:port; False on timeout or if ``alive()`` fails."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive():
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.1)
    return False


def post(
    port: int,
    path: str,
    body: bytes,
    version: str | None,
    extra: dict[str, str] | None = None,
    timeout: float = 15.0,
) -> Reply:
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    if version:
        headers["MCP-Protocol-Version"] = version
    headers.update(extra or {})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        reply = Reply(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)
    finally:
        conn.close()
    reply.payload = _payload(reply)
    return reply


def _payload(reply: Reply) -> Any:
    text = reply.body.decode("utf-8", "replace")
    if reply.headers.get("content-type", "").startswith("text/event-stream"):
        for line in text.splitlines():
            if line.startswith("data:"):
                try:
                    return json.loads(line[5:].strip())
                except ValueError:
                    return None
        return None
    try:
        return json.loads(text) if text.strip() else None
    except ValueError:
        return None


def _is_three(msg: Any) -> bool:
    if not isinstance(msg, dict) or not isinstance(msg.get("result"), dict):
        return False
    content = msg["result"].get("content")
    return (
        isinstance(content, list)
        and bool(content)
        and isinstance(content[0], dict)
        and content[0].get("text") == "3"
        and msg["result"].get("isError") is not True
    )


def describe(reply: Reply, limit: int = 160) -> str:
    """``HTTP 400, JSON-RPC -32602 "..."`` — short enough for a table cell."""
    out = f"HTTP {reply.status}"
    msg = reply.payload
    if isinstance(msg, list) and msg:
        msg = msg[0]
    if isinstance(msg, dict) and isinstance(msg.get("error"), dict):
        err = msg["error"]
        text = str(err.get("message", "")).splitlines()[0] if err.get("message") else ""
        if len(text) > limit:
            text = text[: limit - 3] + "..."
        out += f", JSON-RPC {err.get('code')} {json.dumps(text)}"
    elif msg is None and reply.body:
        snippet = reply.body[:limit].decode("utf-8", "replace").replace("\n", " ")
        out += f", body {snippet!r}"
    return out


def check_call(port: int) -> tuple[Endpoint | None, str]:
    """Find the endpoint and prove tools/call works: ``(endpoint, "")`` or ``(None, why)``."""
    first_failure = ""
    for path in CANDIDATE_PATHS:
        try:
            reply = post(port, path, TOOLS_CALL, SINGLE_PROTOCOL_VERSION)
        except OSError as exc:
            return None, f"POST {path}: {exc!r}"
        if _is_three(reply.payload) and 200 <= reply.status < 300:
            return Endpoint(port, path), ""
        if reply.status in (404, 405) or 300 <= reply.status < 400:
            first_failure = first_failure or f"POST {path}: {describe(reply)}"
            continue
        # The endpoint exists but said no: maybe it wants initialize even when stateless.
        endpoint = _with_initialize(port, path)
        if endpoint is not None:
            return endpoint, ""
        return None, f"POST {path}: {describe(reply)}"
    return None, first_failure or "no MCP endpoint found"


def _with_initialize(port: int, path: str) -> Endpoint | None:
    init = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": SINGLE_PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "jetmcp-bench", "version": "0"},
            },
        }
    ).encode()
    try:
        reply = post(port, path, init, None)
        if not 200 <= reply.status < 300:
            return None
        extra: dict[str, str] = {}
        session = reply.headers.get("mcp-session-id")
        if session:
            extra["Mcp-Session-Id"] = session
        note = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
        post(port, path, note, SINGLE_PROTOCOL_VERSION, extra)
        again = post(port, path, TOOLS_CALL, SINGLE_PROTOCOL_VERSION, extra)
    except OSError:
        return None
    if not (_is_three(again.payload) and 200 <= again.status < 300):
        return None
    endpoint = Endpoint(port, path, extra)
    endpoint.notes.append(
        "needed initialize before tools/call even in stateless mode"
        + (" (and its Mcp-Session-Id on every request)" if extra else "")
    )
    return endpoint


def check_list(ep: Endpoint) -> str:
    """'' when tools/list lists add, else why not."""
    try:
        reply = post(ep.port, ep.path, TOOLS_LIST, SINGLE_PROTOCOL_VERSION, ep.headers)
    except OSError as exc:
        return repr(exc)
    result = reply.payload.get("result") if isinstance(reply.payload, dict) else None
    tools = result.get("tools") if isinstance(result, dict) else None
    if (
        200 <= reply.status < 300
        and isinstance(tools, list)
        and any(isinstance(t, dict) and t.get("name") == "add" for t in tools)
    ):
        return ""
    return describe(reply)


def check_batch(ep: Endpoint) -> tuple[bool, str]:
    """``(True, "")`` when a batch of 10 comes back as 10 right answers, else ``(False, what)``."""
    try:
        reply = post(ep.port, ep.path, BATCH_CALL, BATCH_PROTOCOL_VERSION, ep.headers)
    except OSError as exc:
        return False, repr(exc)
    items = reply.payload
    if 200 <= reply.status < 300 and isinstance(items, list) and len(items) == BATCH_SIZE:
        ids: list[int] = sorted(
            i["id"] for i in items if isinstance(i, dict) and isinstance(i.get("id"), int)
        )
        if all(_is_three(item) for item in items) and ids == list(range(1, BATCH_SIZE + 1)):
            return True, f"HTTP {reply.status}, {BATCH_SIZE} replies"
    return False, describe(reply)
