"""Call the quick-start server with jetmcp.Client, over HTTP or stdio.

python examples/quickstart_client.py [URL]    # default http://127.0.0.1:8000/mcp
python examples/quickstart_client.py --stdio  # run the server as a child process
"""

import asyncio
import os
import sys
from pathlib import Path

from jetmcp import Client


def connect() -> Client:
    if sys.argv[1:] == ["--stdio"]:
        here = Path(__file__).resolve().parent
        return Client.stdio(
            [sys.executable, "-m", "jetmcp", "run", "quickstart:app", "--transport", "stdio"],
            env={**os.environ, "PYTHONPATH": str(here)},
        )
    return Client(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000/mcp")


async def main() -> None:
    async with connect() as client:
        print("revision:", client.revision.version)
        print("tools:", [tool.name for tool in await client.list_all_tools()])
        result = await client.call_tool("add", {"a": 40, "b": 2})
        print("add(40, 2) =", result.text)
        motd = await client.read_resource("quickstart://motd")
        print("motd:", motd.contents[0].text)
        prompt = await client.get_prompt("review", {"code": "print('hi')"})
        print("prompt:", prompt.messages[0].content.text.splitlines()[0])


asyncio.run(main())
