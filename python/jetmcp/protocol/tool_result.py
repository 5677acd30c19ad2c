"""The parts of a ``tools/call`` result that depend on nothing but the value and the
revision: an error result, the text of an exception, and a result a tool returned whole
(the official SDK's ``CallToolResult``, fastmcp's ``ToolResult``). Content blocks are
:mod:`jetmcp.protocol.content`'s; a tool's own shaping (its output schema, masking) stays with
:class:`~jetmcp.server.tools.Tool`.
"""

from __future__ import annotations

from typing import Any

from jetmcp.protocol.content import text_block, to_jsonable


def error_result(text: str) -> dict[str, Any]:
    """A tool error: ``text`` as the only content block, ``isError: true``."""
    return {"content": [text_block(text)], "isError": True}


def exception_text(exc: BaseException) -> str:
    """What a tool error says of ``exc``: its message, else its class's name."""
    text = str(exc)
    return text if text else type(exc).__name__


def sdk_tool_result(value: Any) -> dict[str, Any] | None:
    """The result a tool returned whole: the SDK's ``CallToolResult`` (its ``isError`` and
    ``_meta`` kept) or fastmcp's ``ToolResult``; None for anything else."""
    names = {c.__name__ for c in type(value).__mro__}
    if "ToolResult" in names and hasattr(value, "to_mcp_result"):
        value = value.to_mcp_result()
        if isinstance(value, tuple) and len(value) == 2:
            return {
                "content": [to_jsonable(block) for block in value[0]],
                "structuredContent": value[1],
                "isError": False,
            }
        if isinstance(value, list):
            return {"content": [to_jsonable(block) for block in value], "isError": False}
        names = {c.__name__ for c in type(value).__mro__}
    if "CallToolResult" in names and hasattr(value, "model_dump"):
        dumped: dict[str, Any] = value.model_dump(by_alias=True, mode="json", exclude_none=True)
        return dumped
    return None


__all__ = ["error_result", "exception_text", "sdk_tool_result"]
