"""An MCPServer of the SDK 2.x whose synchronous tools return every kind of value the SDK
converts: jetmcp lifts them (compat/sdk2.py), and the drop-in test holds each call's answer
equal to the SDK's own. Unlike lifted_v1.py it has no tool whose value its output schema
refuses (the 2.x server sends it, and the SDK's client refuses it) and none returning what
cannot be serialized (the 2.x server's stdio session dies of it)."""

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

mcp = MCPServer("lifted-v2")


class Point(BaseModel):
    x: int
    label: str = "p"


@mcp.tool()
def as_dict(n: int) -> dict[str, Any]:
    """A dict: structured content as it is, its JSON as the text."""
    return {"n": n, "twice": [n, n]}


@mcp.tool()
def as_model(n: int) -> Point:
    """A pydantic model."""
    return Point(x=n)


@mcp.tool()
def as_list(n: int) -> list[int]:
    """A list: wrapped as {"result": [...]}."""
    return [n, n + 1]


@mcp.tool()
def as_float(x: float) -> float:
    return x / 2


@mcp.tool()
def as_tuple(n: int) -> tuple[int, str]:
    return (n, str(n))


@mcp.tool()
def as_optional(n: int) -> int | None:
    return None if n % 2 else n


@mcp.tool()
def as_text(s: str) -> str:
    return s * 2


@mcp.tool()
def no_annotation(n: int):  # type: ignore[no-untyped-def]
    """No return annotation: a dict comes back as text only."""
    return {"n": n}


@mcp.tool()
def bare_dict(n: int) -> dict:  # type: ignore[type-arg]
    return {"n": n}


@mcp.tool()
def wrong_output(n: int) -> dict[str, int]:
    """Returns what its own output schema refuses: the SDK answers an output validation error."""
    return {"n": "not a number"}  # type: ignore[dict-item]


@mcp.tool()
def as_call_result(n: int) -> CallToolResult:
    """A CallToolResult as it is, isError and _meta kept."""
    return CallToolResult(
        content=[TextContent(type="text", text=f"n={n}")], isError=True, _meta={"k": n}
    )


@mcp.tool()
def as_content(n: int) -> list[TextContent]:
    return [TextContent(type="text", text=str(n)), TextContent(type="text", text="two")]


@mcp.tool()
def unstructured(n: int) -> Point:
    return Point(x=n)


mcp.remove_tool("unstructured")
mcp.add_tool(unstructured, structured_output=False)


@mcp.tool()
def raises(n: int) -> int:
    raise ValueError(f"no {n}")


if __name__ == "__main__":
    mcp.run()
