"""A FastMCP file as written for an old mcp 1.x (1.2 .. 1.22: before ``mcp.server.experimental``
and structured output), served by its SDK and by jetmcp in tests/compat/dropin/test_old_sdk.py."""

from mcp.server.fastmcp import FastMCP

mcp = FastMCP("old-sdk", instructions="Adds numbers and greets.")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@mcp.tool()
def fail(message: str) -> str:
    """Raise with the message."""
    raise ValueError(message)


@mcp.resource("notes://today")
def today() -> str:
    """Today's note."""
    return "Ship it."


@mcp.prompt()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Hello, {name}!"


if __name__ == "__main__":
    mcp.run()
