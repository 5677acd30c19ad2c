"""The tools of lifted_v1.py and lifted_v2.py: synchronous, plain parameters, and between them
every kind of value the SDKs convert. Each file registers them with :func:`register` on its
own SDK's server (the drop-in test runs them from this folder)."""

from typing import Any

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel


class Point(BaseModel):
    x: int
    label: str = "p"


def as_dict(n: int) -> dict[str, Any]:
    """A dict: structured content as it is, its JSON as the text."""
    return {"n": n, "twice": [n, n]}


def as_model(n: int) -> Point:
    """A pydantic model."""
    return Point(x=n)


def as_list(n: int) -> list[int]:
    """A list: wrapped as {"result": [...]}."""
    return [n, n + 1]


def as_float(x: float) -> float:
    return x / 2


def as_tuple(n: int) -> tuple[int, str]:
    return (n, str(n))


def as_optional(n: int) -> int | None:
    return None if n % 2 else n


def as_text(s: str) -> str:
    return s * 2


def no_annotation(n: int):  # type: ignore[no-untyped-def]
    """No return annotation: a dict comes back as text only."""
    return {"n": n}


def bare_dict(n: int) -> dict:  # type: ignore[type-arg]
    return {"n": n}


def wrong_output(n: int) -> dict[str, int]:
    """Returns what its own output schema refuses: the SDK answers an output validation error."""
    return {"n": "not a number"}  # type: ignore[dict-item]


def as_call_result(n: int) -> CallToolResult:
    """A CallToolResult as it is, isError and _meta kept."""
    return CallToolResult(
        content=[TextContent(type="text", text=f"n={n}")], isError=True, _meta={"k": n}
    )


def as_content(n: int) -> list[TextContent]:
    return [TextContent(type="text", text=str(n)), TextContent(type="text", text="two")]


def unstructured(n: int) -> Point:
    return Point(x=n)


def raises(n: int) -> int:
    raise ValueError(f"no {n}")


def register(mcp: Any) -> None:
    """Add every tool here to ``mcp`` (a FastMCP 1.x or an MCPServer 2.x); ``unstructured``
    without structured output."""
    for fn in (
        as_dict,
        as_model,
        as_list,
        as_float,
        as_tuple,
        as_optional,
        as_text,
        no_annotation,
        bare_dict,
        wrong_output,
        as_call_result,
        as_content,
        raises,
    ):
        mcp.tool()(fn)
    mcp.add_tool(unstructured, structured_output=False)
