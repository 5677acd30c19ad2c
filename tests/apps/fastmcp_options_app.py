"""jetmcp's own Server with fastmcp's decorator options, for fastmcp's Client:
tests/compat/dropin/test_fastmcp_options_client.py (which builds the same tools on fastmcp
to compare)."""

from __future__ import annotations

from jetmcp import Server

app = Server("fastmcp-options", exclude_tags={"internal"})


@app.tool(tags={"math", "public"})
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@app.tool(meta={"owner": "ada"}, annotations={"readOnlyHint": True})
def items() -> list[int]:
    """A list, wrapped under result."""
    return [1, 2]


@app.tool(output_schema=None)
def raw() -> int:
    """No output schema: text only."""
    return 7


@app.tool()
def record() -> dict[str, int]:
    """An object: not wrapped."""
    return {"n": 1}


@app.tool(tags={"internal"})
def secret() -> str:
    """Filtered out by exclude_tags."""
    return "secret"


@app.tool(enabled=False)
def off() -> str:
    """Disabled."""
    return "off"


@app.tool(exclude_args=["user"])
def greet(name: str, user: str = "system") -> str:
    """``user`` is hidden from the schema."""
    return f"{name} by {user}"
