"""What each MCP revision allows, and the shapes of its messages."""
