"""The exact request bodies every server gets, and the fixed replies the Granian ceiling sends.

Pure stdlib, no third-party imports: the runner, the stdio driver and the ceiling apps all
import it (the ceiling from inside Granian's worker).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

#: The protocol revision sent in ``MCP-Protocol-Version`` for single requests: the newest
#: handshake-era revision every peer serves.
SINGLE_PROTOCOL_VERSION = "2025-11-25"
#: Batches exist only up to 2025-03-26 (2025-06-18 removed them).
BATCH_PROTOCOL_VERSION = "2025-03-26"
BATCH_SIZE = 10


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def call_request(request_id: int = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 1, "b": 2}},
    }


TOOLS_CALL = _dumps(call_request(1))
TOOLS_LIST = _dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
#: A tools/call of ``add_ctx``: the same sum from a tool that takes the SDK's ``Context``
#: (only the servers written for the SDK have it: see run.py's CONTEXT_SERVERS).
CONTEXT_CALL = _dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "add_ctx", "arguments": {"a": 1, "b": 2}},
    }
)
BATCH_CALL = _dumps([call_request(i) for i in range(1, BATCH_SIZE + 1)])

#: The published server of the drop-in rows: mcp-server-time, a package on PyPI written for
#: the official SDK 2.x (``MCPServer``), served on its own SDK and unchanged on jetmcp
#: (``create_server('UTC')``). It has no tool that takes a ``Context``; its plainest is
#: ``get_current_time`` (one string argument, no network, a structured result).
PUBLISHED_PACKAGE = "mcp-server-time"
PUBLISHED_TARGET = "mcp_server_time.server:create_server('UTC')"
PUBLISHED_CALL = _dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "get_current_time", "arguments": {"timezone": "UTC"}},
    }
)

#: The published FastMCP server of the drop-in rows: code-index-mcp, a package on PyPI
#: written for the official SDK 1.x (a module-level ``FastMCP`` with a lifespan), whose
#: tools mostly take a ``Context`` and read the lifespan's state through it. Served on mcp
#: 1.30.0 and unchanged on jetmcp, both from the drop-in corpus's 1.x venv. Its plain tool
#: ``check_temp_directory`` and its Context tool ``get_settings_info`` need no project (no
#: index is built): both answer from a few file-system checks, the same work on both sides.
FASTMCP_PACKAGE = "code-index-mcp"
FASTMCP_TARGET = "code_index_mcp.server:mcp"
FASTMCP_PLAIN_CALL = _dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "check_temp_directory", "arguments": {}},
    }
)
FASTMCP_CONTEXT_CALL = _dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "get_settings_info", "arguments": {}},
    }
)


def call_reply(request_id: int = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "result": {
            "content": [{"type": "text", "text": "3"}],
            "structuredContent": {"result": 3},
            "isError": False,
        },
    }


#: What a tools/call of add(1, 2) answers (the shape the mcp SDK and jetmcp send).
CALL_REPLY = _dumps(call_reply(1))
LIST_REPLY = _dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "tools": [
                {
                    "name": "add",
                    "description": "Add two integers.",
                    "inputSchema": {
                        "type": "object",
                        "properties": {
                            "a": {"title": "A", "type": "integer"},
                            "b": {"title": "B", "type": "integer"},
                        },
                        "required": ["a", "b"],
                        "title": "addArguments",
                    },
                    "outputSchema": {
                        "type": "object",
                        "properties": {"result": {"title": "Result", "type": "integer"}},
                        "required": ["result"],
                        "title": "addOutput",
                    },
                }
            ]
        },
    }
)
BATCH_REPLY = _dumps([call_reply(i) for i in range(1, BATCH_SIZE + 1)])


# -- the request shapes ------------------------------------------------------------------
# A tools/call in each shape a server meets (``--workloads request-shapes``): a plain tool and
# a pydantic tool at 2025-06-18 and at 2026-07-28, a Context tool that logs, a 2026-07-28
# batch, and a call on a legacy session.
# jetmcp serves them from bench/load/jetmcp_server.py (the peers from their files with
# --bench-tools); the replies below are what a correct jetmcp answers, byte for byte, and
# what the ceiling sends back for the same body.

LEGACY_0618 = "2025-06-18"
MODERN_VERSION = "2026-07-28"
META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
#: The bench app's name and version (bench/load/jetmcp_server.py): 2026-07-28 replies name it.
BENCH_SERVER_INFO = {"name": "jetmcp-bench", "version": "0.1.0"}
MODERN_META = {
    META_PROTOCOL_VERSION: MODERN_VERSION,
    META_CLIENT_CAPABILITIES: {},
    META_CLIENT_INFO: {"name": "jetmcp-bench", "version": "0"},
}
ADD_ARGS = {"a": 1, "b": 2}
SCALE_ARGS = {"point": {"x": 1.5, "y": -2.0}, "factor": 2.0}
#: What scale(SCALE_ARGS) answers as structuredContent.
SCALE_RESULT = {"x": 3.0, "y": -4.0}


def tool_call(
    name: str, arguments: dict[str, Any], request_id: int = 1, modern: bool = False
) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if modern:
        params["_meta"] = MODERN_META
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def modern_headers(name: str | None) -> dict[str, str]:
    """The HTTP headers of a 2026-07-28 request: the version, and ``Mcp-Method``/``Mcp-Name``
    for a single ``tools/call`` (a batch names no single request, so ``name=None``)."""
    headers = {"MCP-Protocol-Version": MODERN_VERSION}
    if name is not None:
        headers["Mcp-Method"] = "tools/call"
        headers["Mcp-Name"] = name
    return headers


def tool_reply(
    text: str, structured: dict[str, Any], request_id: int = 1, modern: bool = False
) -> dict[str, Any]:
    """A tool's reply, in jetmcp's member order (2026-07-28 adds resultType and _meta)."""
    result: dict[str, Any] = {
        "content": [{"type": "text", "text": text}],
        "structuredContent": structured,
        "isError": False,
    }
    if modern:
        result["resultType"] = "complete"
        result["_meta"] = {META_SERVER_INFO: BENCH_SERVER_INFO}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


#: scale's content text: the model as indented JSON (what jetmcp and the mcp SDK send).
SCALE_TEXT = json.dumps(SCALE_RESULT, indent=2)


@dataclass(frozen=True)
class Workload:
    """One request-shape HTTP workload: what is sent, and what a correct server answers."""

    key: str
    title: str
    body: bytes
    #: Every header beyond Content-Type and Accept (MCP-Protocol-Version included).
    headers: dict[str, str]
    #: The tool it calls (a server without it skips the workload).
    tool: str
    #: The correct reply, byte for byte as jetmcp sends it: the ceiling's answer.
    reply: bytes
    #: JSON-RPC entries per HTTP request.
    entries: int = 1
    #: Runs on a legacy session (initialize first, Mcp-Session-Id on every request).
    session: bool = False
    #: The reply must carry no notifications/message (the client named no log level).
    no_notification: bool = False


def _modern_batch() -> tuple[bytes, bytes]:
    ids = range(1, BATCH_SIZE + 1)
    body = _dumps([tool_call("add", ADD_ARGS, i, modern=True) for i in ids])
    reply = _dumps([tool_reply("3", {"result": 3}, i, modern=True) for i in ids])
    return body, reply


_BATCH_2026, _BATCH_2026_REPLY = _modern_batch()
_ADD_2026_REPLY = _dumps(tool_reply("3", {"result": 3}, modern=True))

#: The request-shape workloads, in the order they run.
REQUEST_SHAPES: dict[str, Workload] = {
    w.key: w
    for w in (
        Workload(
            "call-0618",
            f"tools/call add @ {LEGACY_0618}",
            TOOLS_CALL,
            {"MCP-Protocol-Version": LEGACY_0618},
            "add",
            CALL_REPLY,
        ),
        Workload(
            "call-2026",
            f"tools/call add @ {MODERN_VERSION}",
            _dumps(tool_call("add", ADD_ARGS, modern=True)),
            modern_headers("add"),
            "add",
            _ADD_2026_REPLY,
        ),
        Workload(
            "pydantic",
            f"tools/call of async scale(Point, float) -> Point @ {LEGACY_0618}",
            _dumps(tool_call("scale", SCALE_ARGS)),
            {"MCP-Protocol-Version": LEGACY_0618},
            "scale",
            _dumps(tool_reply(SCALE_TEXT, SCALE_RESULT)),
        ),
        Workload(
            "ctx-log",
            f"tools/call of async add_log (await ctx.info, no log level) @ {MODERN_VERSION}",
            _dumps(tool_call("add_log", ADD_ARGS, modern=True)),
            modern_headers("add_log"),
            "add_log",
            _ADD_2026_REPLY,
            no_notification=True,
        ),
        Workload(
            "pydantic-2026",
            f"tools/call of async scale(Point, float) -> Point @ {MODERN_VERSION}",
            _dumps(tool_call("scale", SCALE_ARGS, modern=True)),
            modern_headers("scale"),
            "scale",
            _dumps(tool_reply(SCALE_TEXT, SCALE_RESULT, modern=True)),
        ),
        Workload(
            "batch-2026",
            f"batch of {BATCH_SIZE} tools/call add @ {MODERN_VERSION} (io.jetmcp/batch)",
            _BATCH_2026,
            modern_headers(None),
            "add",
            _BATCH_2026_REPLY,
            entries=BATCH_SIZE,
        ),
        Workload(
            "session",
            f"tools/call add on a legacy session @ {SINGLE_PROTOCOL_VERSION}",
            TOOLS_CALL,
            {"MCP-Protocol-Version": SINGLE_PROTOCOL_VERSION},
            "add",
            CALL_REPLY,
            session=True,
        ),
    )
}
#: The ceiling's answers to the request-shape bodies that differ from the older workloads' (the
#: others, the plain tools/call, answer CALL_REPLY through the byte peek).
_EXACT_REPLIES: dict[bytes, bytes] = {
    w.body: w.reply for w in REQUEST_SHAPES.values() if w.body not in (TOOLS_CALL, TOOLS_LIST)
}


def canned_reply(body: bytes) -> bytes:
    """The ceiling's answer: picked by one dict lookup of the whole body (the request-shape
    bodies) or a byte peek, no JSON parsing (that is the point)."""
    exact = _EXACT_REPLIES.get(body)
    if exact is not None:
        return exact
    if body[:1] == b"[":
        return BATCH_REPLY
    if b"tools/list" in body:
        return LIST_REPLY
    return CALL_REPLY
