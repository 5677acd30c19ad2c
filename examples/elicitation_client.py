"""A client that answers elicitation and sampling, at a legacy revision and at 2026-07-28.

    python examples/elicitation_client.py [URL]   # default http://127.0.0.1:8000/mcp

The handlers get the request's params as models and return a model (or a dict); a real client
would show a form to its user and call its LLM here.
"""

import asyncio
import sys

from jetmcp import Client
from jetmcp.client import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
)


async def ask_user(request: ElicitRequestParams) -> ElicitResult:
    print("  the server asks:", request.message)
    return ElicitResult(action="accept", content={"date": "2026-12-24", "guests": 4})


async def ask_llm(request: CreateMessageRequestParams) -> CreateMessageResult:
    print("  the server samples:", request.messages[0].content["text"][:40], "…")
    return CreateMessageResult(
        content={"type": "text", "text": "See you then!"}, model="a-local-model", role="assistant"
    )


async def main(url: str) -> None:
    for revision in ("2025-11-25", "2026-07-28"):
        print(f"at {revision}:")
        async with Client(
            url, revision=revision, elicitation_handler=ask_user, sampling_handler=ask_llm
        ) as client:
            result = await client.call_tool("book_table", {"restaurant": "Chez Ada"})
            print(" ", result.text)


asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000/mcp"))
