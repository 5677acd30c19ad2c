"""An MCPServer of the SDK 2.x whose synchronous tools return every kind of value the SDK
converts: jetmcp lifts them (compat/sdk2.py), and the drop-in test holds each call's answer
equal to the SDK's own. Unlike lifted_v1.py it has no tool whose value its output schema
refuses (the 2.x server sends it, and the SDK's client refuses it) and none returning what
cannot be serialized (the 2.x server's stdio session dies of it)."""

from mcp.server.mcpserver import MCPServer
from return_kinds import register

mcp = MCPServer("lifted-v2")
register(mcp)

if __name__ == "__main__":
    mcp.run()
