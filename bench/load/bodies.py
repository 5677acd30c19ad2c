"""The exact request bodies every server gets, and the fixed replies the Granian ceiling sends.

Pure stdlib, no third-party imports: the runner, the stdio driver and the ceiling apps all
import it (the ceiling from inside Granian's worker).
"""

from __future__ import annotations

import json
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


def canned_reply(body: bytes) -> bytes:
    """The ceiling's answer: picked by a byte peek, no JSON parsing (that is the point)."""
    if body[:1] == b"[":
        return BATCH_REPLY
    if b"tools/list" in body:
        return LIST_REPLY
    return CALL_REPLY
