"""Quick start: a server with one tool, one resource and one prompt.

PYTHONPATH=examples jetmcp run quickstart:app --transport http   # HTTP on :8000/mcp
PYTHONPATH=examples jetmcp run quickstart:app --transport stdio  # the same, over stdio
python examples/quickstart_client.py                             # call it
"""

from jetmcp import Server

app = Server("quickstart")


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@app.resource("quickstart://motd")
def motd() -> str:
    """The message of the day."""
    return "Keep calm and serve MCP."


@app.prompt()
def review(code: str) -> str:
    """Ask for a code review."""
    return f"Please review this code:\n\n{code}"
