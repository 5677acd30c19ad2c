"""Answer input_rounds.py's questions: first by hand, to show one round on the wire, then with
jetmcp.Client, whose handlers answer every round by themselves.

    python examples/input_rounds_client.py [URL]  # default http://127.0.0.1:8000/mcp
"""

import asyncio
import json
import sys
import urllib.request

from jetmcp import Client
from jetmcp.client import CreateMessageResult, ElicitResult, Root

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {
        "elicitation": {"form": {}},
        "sampling": {},
        "roots": {},
    },
}


def first_round(url: str) -> None:
    params = {"name": "plan_trip", "arguments": {"city": "Lisbon"}, "_meta": META}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "plan_trip",
    }
    request = urllib.request.Request(url, json.dumps(body).encode(), headers)
    with urllib.request.urlopen(request, timeout=10) as response:
        result = json.loads(response.read())["result"]
    asked = {key: ask["method"] for key, ask in result["inputRequests"].items()}
    print("round 1:", result["resultType"], asked)


async def elicit(request: object) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada"})


async def sample(request: object) -> CreateMessageResult:
    return CreateMessageResult(
        content={"type": "text", "text": "walk, eat, listen to fado."}, model="m", role="assistant"
    )


async def with_client(url: str) -> None:
    async with Client(
        url,
        elicitation_handler=elicit,
        sampling_handler=sample,
        roots=[Root(uri="file:///home/ada/trips", name="trips")],
    ) as client:
        print("revision:", client.revision.version)
        result = await client.call_tool("plan_trip", {"city": "Lisbon"})
        print(result.text)


url = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000/mcp"
first_round(url)
asyncio.run(with_client(url))
