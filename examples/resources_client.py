"""List and read the resources of resources.py.

python examples/resources_client.py [URL]     # default http://127.0.0.1:8000/mcp
"""

import asyncio
import sys

from jetmcp import Client, McpError


async def main(url: str) -> None:
    async with Client(url) as client:
        for resource in await client.list_all_resources():
            print("resource:", resource.uri, resource.mime_type)
        for template in await client.list_all_resource_templates():
            print("template:", template.uri_template)
        print((await client.read_resource("library://catalogue")).contents[0].text)
        print("book 2:", (await client.read_resource("library://books/2")).contents[0].text)
        print((await client.read_resource("library://books/1/pages/7")).contents[0].text)
        blob = (await client.read_resource("library://cover.png")).contents[0]
        print("cover:", blob.mime_type, blob.blob)
        try:
            await client.read_resource("library://books/99")
        except McpError as exc:
            print("book 99:", exc.code, exc.message)


asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000/mcp"))
