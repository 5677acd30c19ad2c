"""Get the prompts of prompts.py and complete their arguments.

python examples/prompts_client.py [URL]       # default http://127.0.0.1:8000/mcp
"""

import asyncio
import sys

from jetmcp import Client


async def main(url: str) -> None:
    async with Client(url) as client:
        for prompt in await client.list_all_prompts():
            print("prompt:", prompt.name, [arg.name for arg in prompt.arguments or []])
        code = {"language": "rust", "snippet": "fn main() {}"}
        explain = await client.get_prompt("explain", code)
        print(explain.messages[0].content.text.splitlines()[0])
        scaffold = await client.get_prompt("scaffold", {"language": "rust", "framework": "axum"})
        print([message.role for message in scaffold.messages])

        ref = {"type": "ref/prompt", "name": "scaffold"}
        languages = await client.complete(ref, ("language", "r"))
        print("language r…:", languages.completion.values)
        frameworks = await client.complete(ref, ("framework", ""), context={"language": "python"})
        print("python frameworks:", frameworks.completion.values)
        docs = {"type": "ref/resource", "uri": "docs://{language}/index"}
        print("docs t…:", (await client.complete(docs, ("language", "t"))).completion.values)


asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000/mcp"))
