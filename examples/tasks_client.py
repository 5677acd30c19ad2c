"""Run tasks.py's `report` as a task: at 2025-11-25 with jetmcp.Client, and at 2026-07-28 with
plain HTTP requests, to show the extension's messages as they are on the wire.

    python examples/tasks_client.py [URL]         # default http://127.0.0.1:8000/mcp
"""

import asyncio
import json
import sys
import time
import urllib.request
from typing import Any

from jetmcp import Client

TASKS = "io.modelcontextprotocol/tasks"


async def legacy(url: str) -> None:
    async with Client(url, revision="2025-11-25") as client:
        call = {"name": "report", "arguments": {"pages": 3}, "task": {"ttl": 60_000}}
        created = (await client.request("tools/call", call))["task"]
        print("2025-11-25 created:", created["status"])
        status = await client.request("tasks/get", {"taskId": created["taskId"]})
        print("2025-11-25 polled:", status["status"])
        # tasks/result waits for the end and answers what the plain call would have.
        result = await client.request("tasks/result", {"taskId": created["taskId"]})
        print("2025-11-25 result:", result["content"][0]["text"])


def post(url: str, method: str, params: dict[str, Any], name: str) -> dict[str, Any]:
    """One 2026-07-28 request: the revision and capabilities travel in every request."""
    params["_meta"] = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}},
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": method,
        "Mcp-Name": name,
    }
    request = urllib.request.Request(url, json.dumps(body).encode(), headers)
    with urllib.request.urlopen(request, timeout=10) as response:
        result: dict[str, Any] = json.loads(response.read())["result"]
        return result


def modern(url: str) -> None:
    created = post(url, "tools/call", {"name": "report", "arguments": {"pages": 3}}, "report")
    print("2026-07-28 created:", created["resultType"], created["status"])
    task_id = created["taskId"]
    deadline = time.monotonic() + 10
    while True:
        task = post(url, "tasks/get", {"taskId": task_id}, task_id)
        if task["status"] != "working" or time.monotonic() > deadline:
            break
        time.sleep(created.get("pollIntervalMs", 100) / 1000)
    print("2026-07-28 finished:", task["status"], task["result"]["content"][0]["text"])


url = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000/mcp"
asyncio.run(legacy(url))
modern(url)
