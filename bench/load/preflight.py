"""Pre-flight: a plain-Python HTTP check that a server really answers before it is loaded.

Each check sends the very bytes the load generator will send and looks at what comes back:
``tools/call add(1, 2)`` must answer content text ``"3"``, ``tools/list`` must list ``add``,
and a batch of 10 at 2025-03-26 is either accepted (10 correct replies) or refused (the HTTP
status and JSON-RPC error are kept for the report). Each request-shape workload's reply is
judged by :func:`check_workload` (right result and structuredContent, resultType at
2026-07-28, no notifications/message where the client named no log level).
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
    FASTMCP_CONTEXT_CALL,
    FASTMCP_PLAIN_CALL,
    MODERN_VERSION,
    PUBLISHED_CALL,
    SCALE_RESULT,
    SINGLE_PROTOCOL_VERSION,
    TOOLS_CALL,
    TOOLS_LIST,
    Workload,
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


def _structured(msg: Any) -> dict[str, Any] | None:
    """The structured result of a successful tools/call reply, or None."""
    if not isinstance(msg, dict) or not isinstance(msg.get("result"), dict):
        return None
    result = msg["result"]
    structured = result.get("structuredContent")
    if result.get("isError") is True or not isinstance(structured, dict):
        return None
    return structured


def _is_utc_now(msg: Any) -> bool:
    """The published server's answer to ``get_current_time(UTC)``: its structured result
    names the zone (the time itself changes every second)."""
    structured = _structured(msg)
    return (
        structured is not None
        and structured.get("timezone") == "UTC"
        and isinstance(structured.get("datetime"), str)
    )


def _is_temp_report(msg: Any) -> bool:
    """code-index-mcp's answer to ``check_temp_directory`` or ``get_settings_info``: a
    structured result that names its temporary directory (both tools report it)."""
    structured = _structured(msg)
    return structured is not None and isinstance(structured.get("temp_directory"), str)


#: What the tools/call check sends and how it judges the answer, by ``peers.Server.probe``.
PROBES: dict[str, tuple[bytes, Any]] = {
    "add": (TOOLS_CALL, _is_three),
    "published": (PUBLISHED_CALL, _is_utc_now),
    "published-fastmcp": (FASTMCP_PLAIN_CALL, _is_temp_report),
}
#: Other calls of a workload that are judged before it is loaded (its body and judge).
CALL_CHECKS: dict[str, tuple[bytes, Any]] = {
    "published-fastmcp-ctx": (FASTMCP_CONTEXT_CALL, _is_temp_report),
}


def check_body(ep: Endpoint, body: bytes, judge: Any) -> str:
    """``""`` when ``body`` is answered as ``judge`` wants, else what came back."""
    try:
        reply = post(ep.port, ep.path, body, SINGLE_PROTOCOL_VERSION, ep.headers)
    except OSError as exc:
        return f"POST {ep.path}: {exc!r}"
    if 200 <= reply.status < 300 and judge(reply.payload):
        return ""
    return describe(reply)


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


def check_call(port: int, probe: str = "add") -> tuple[Endpoint | None, str]:
    """Find the endpoint and prove tools/call works: ``(endpoint, "")`` or ``(None, why)``.
    ``probe`` names the call (:data:`PROBES`): ``add(1, 2)``, or the published server's."""
    body, judge = PROBES[probe]
    first_failure = ""
    for path in CANDIDATE_PATHS:
        try:
            reply = post(port, path, body, SINGLE_PROTOCOL_VERSION)
        except OSError as exc:
            return None, f"POST {path}: {exc!r}"
        if judge(reply.payload) and 200 <= reply.status < 300:
            return Endpoint(port, path), ""
        if reply.status in (404, 405) or 300 <= reply.status < 400:
            first_failure = first_failure or f"POST {path}: {describe(reply)}"
            continue
        # The endpoint exists but said no: maybe it wants initialize even when stateless.
        endpoint = _with_initialize(port, path, body, judge)
        if endpoint is not None:
            return endpoint, ""
        return None, f"POST {path}: {describe(reply)}"
    return None, first_failure or "no MCP endpoint found"


def _with_initialize(port: int, path: str, body: bytes, judge: Any) -> Endpoint | None:
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
        again = post(port, path, body, SINGLE_PROTOCOL_VERSION, extra)
    except OSError:
        return None
    if not (judge(again.payload) and 200 <= again.status < 300):
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


# -- the request-shape workloads -----------------------------------------------------------


@dataclass
class Verdict:
    """What one request-shape request came back as: ``ok``, ``refused`` (an HTTP error status or a
    JSON-RPC error: the server does not serve the shape) or ``wrong`` (answered, but not the
    right answer)."""

    status: str
    detail: str
    #: Size of the reply body, and whether it is the ceiling's bytes exactly.
    size: int = 0
    same_bytes: bool = False


def _events(reply: Reply) -> list[Any]:
    """Every JSON-RPC message of a reply: a JSON body, or each data event of an SSE stream."""
    if not reply.headers.get("content-type", "").startswith("text/event-stream"):
        return [reply.payload]
    out: list[Any] = []
    for line in reply.body.decode("utf-8", "replace").splitlines():
        if line.startswith("data:") and line[5:].strip():
            try:
                out.append(json.loads(line[5:].strip()))
            except ValueError:
                out.append(None)
    return out


def _wrong_result(w: Workload, msg: Any, request_id: int) -> str:
    """'' when ``msg`` is the right answer to entry ``request_id`` of ``w``, else why not."""
    if not isinstance(msg, dict):
        return f"not a JSON-RPC object: {str(msg)[:120]}"
    if msg.get("id") != request_id:
        return f"id {msg.get('id')!r}, expected {request_id}"
    result = msg.get("result")
    if not isinstance(result, dict):
        return "no result"
    if result.get("isError") is True:
        return f"isError: {str(result.get('content'))[:120]}"
    content = result.get("content")
    text = content[0].get("text") if isinstance(content, list) and content else None
    if not isinstance(text, str):
        return "no text content"
    if w.tool == "scale":
        want: dict[str, Any] = SCALE_RESULT
        try:
            text_value = json.loads(text)
        except ValueError:
            return f"content text is not JSON: {text[:80]!r}"
        if text_value != want:
            return f"content text {text[:80]!r}, expected the model {want}"
    else:
        want = {"result": 3}
        if text != "3":
            return f"content text {text[:80]!r}, expected '3'"
    if result.get("structuredContent") != want:
        return f"structuredContent {result.get('structuredContent')!r}, expected {want}"
    modern = w.headers.get("MCP-Protocol-Version") == MODERN_VERSION
    if modern and result.get("resultType") != "complete":
        return f"resultType {result.get('resultType')!r}, expected 'complete'"
    return ""


def check_workload(ep: Endpoint, w: Workload) -> Verdict:
    """Send the workload's exact bytes and headers once and judge the answer."""
    try:
        reply = post(ep.port, ep.path, w.body, None, {**w.headers, **ep.headers})
    except OSError as exc:
        return Verdict("wrong", repr(exc))
    size = len(reply.body)
    same = reply.body == w.reply
    events = _events(reply)
    bad_status = not 200 <= reply.status < 300
    first = events[-1] if events else None
    if isinstance(first, list):
        first = first[0] if first else None
    if bad_status or (isinstance(first, dict) and "error" in first):
        return Verdict("refused", describe(reply), size, same)
    notes = [m for m in events if isinstance(m, dict) and "method" in m]
    if notes:
        # No tool here logs except add_log, and its client names no log level.
        methods = ", ".join(str(m.get("method")) for m in notes)
        why = " (the client named no log level)" if w.no_notification else ""
        return Verdict("wrong", f"sent {methods}{why}", size, same)
    answers = [m for m in events if not (isinstance(m, dict) and "method" in m)]
    if len(answers) != 1:
        return Verdict("wrong", f"{len(answers)} answers in the reply", size, same)
    answer = answers[0]
    if w.entries > 1:
        if not isinstance(answer, list) or len(answer) != w.entries:
            return Verdict("wrong", f"expected an array of {w.entries}: {describe(reply)}")
        for i, item in enumerate(answer, 1):
            why = _wrong_result(w, item, i)
            if why:
                return Verdict("wrong", f"entry {i}: {why}", size, same)
    else:
        why = _wrong_result(w, answer, 1)
        if why:
            return Verdict("wrong", why, size, same)
    return Verdict("ok", f"HTTP {reply.status}, {size} bytes", size, same)


def open_session(
    port: int, path: str, version: str = SINGLE_PROTOCOL_VERSION
) -> tuple[Endpoint | None, str]:
    """``initialize`` + ``notifications/initialized`` at ``version``: an endpoint carrying the
    server's ``Mcp-Session-Id``, or ``(None, why)`` (a server that hands out no session id
    runs no sessions)."""
    init = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "jetmcp-bench", "version": "0"},
            },
        }
    ).encode()
    try:
        reply = post(port, path, init, None)
        if not 200 <= reply.status < 300:
            return None, f"initialize: {describe(reply)}"
        session = reply.headers.get("mcp-session-id")
        if not session:
            return None, f"initialize answered HTTP {reply.status} with no Mcp-Session-Id"
        extra = {"Mcp-Session-Id": session}
        note = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
        done = post(port, path, note, version, extra)
        if not 200 <= done.status < 300:
            return None, f"notifications/initialized: {describe(done)}"
    except OSError as exc:
        return None, f"initialize: {exc!r}"
    return Endpoint(port, path, extra, [f"session {session[:12]}... opened at {version}"]), ""
