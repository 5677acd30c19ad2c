"""A FastMCP server of the SDK 1.x whose synchronous tools return every kind of value the SDK
converts: jetmcp lifts them (compat/sdk1.py), and the drop-in test holds each call's answer
equal to the SDK's own, output-schema failures included."""

from mcp.server.fastmcp import FastMCP
from pydantic import BaseModel, Field
from return_kinds import register

mcp = FastMCP("lifted-v1")
register(mcp)


class Small(BaseModel):
    n: int = Field(json_schema_extra={"maximum": 3})


@mcp.tool()
def schema_refuses(n: int) -> Small:
    """pydantic takes the value, the output schema does not: the SDK's output check answers."""
    return Small(n=n + 10)


@mcp.tool()
def bad_return(n: int) -> int:
    """Annotated int, returns an object the converter cannot serialize."""
    return object()  # type: ignore[return-value]


if __name__ == "__main__":
    mcp.run()
