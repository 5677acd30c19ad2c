"""fastmcp's own ``Client`` against jetmcp's ``Server`` using fastmcp's decorator options
(issue 41 item 11), over Streamable HTTP (``jetmcp run``), compared with the same tools
built on fastmcp 4.x (served to the same client in memory): the same ``.data`` (a wrapped
``int`` is ``3``, not the wrapper), the same tags under ``_meta.fastmcp.tags``, the same
output schemas' wrap mark; tools filtered by ``exclude_tags`` or disabled are unknown to
the client; an excluded argument is not in the schema. Needs the drop-in environment's
fastmcp 4.x (``bash scripts/dropin.sh``)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from harness.servers import AppServer

fastmcp = pytest.importorskip("fastmcp", reason="the drop-in environment: scripts/dropin.sh")

APP = "tests.apps.fastmcp_options_app:app"
MARK = "x-fastmcp-wrap-result"


@pytest.fixture(scope="module")
def served() -> Iterator[AppServer]:
    server = AppServer(APP)
    try:
        yield server
    finally:
        server.stop()


def _twin() -> Any:
    """The same tools on fastmcp itself (the options fastmcp 4.x still takes)."""
    mcp = fastmcp.FastMCP("twin")

    @mcp.tool(tags={"math", "public"})
    def add(a: int, b: int) -> int:
        return a + b

    @mcp.tool(meta={"owner": "ada"}, annotations={"readOnlyHint": True})
    def items() -> list[int]:
        return [1, 2]

    @mcp.tool(output_schema=None)
    def raw() -> int:
        return 7

    @mcp.tool
    def record() -> dict[str, int]:
        return {"n": 1}

    return mcp


async def _survey(target: Any) -> dict[str, Any]:
    async with fastmcp.Client(target) as client:
        tools = {t.name: t for t in await client.list_tools()}
        data = {}
        for name, args in (("add", {"a": 1, "b": 2}), ("items", {}), ("record", {})):
            data[name] = (await client.call_tool(name, args)).data
        # No output schema: the text (fastmcp's .data for it depends on the revision).
        raw = await client.call_tool("raw", {})
        data["raw"] = raw.content[0].text
        return {"tools": tools, "data": data}


def test_fastmcps_client_reads_jetmcp_as_it_reads_fastmcp(served: AppServer) -> None:
    ours = asyncio.run(_survey(served.url))
    theirs = asyncio.run(_survey(_twin()))
    assert (
        ours["data"]
        == theirs["data"]
        == {"add": 3, "items": [1, 2], "raw": "7", "record": {"n": 1}}
    )
    for name in ("add", "items", "raw", "record"):
        mine, twin = ours["tools"][name], theirs["tools"][name]
        mine_schema, twin_schema = mine.output_schema, twin.output_schema
        assert (mine_schema is None) == (twin_schema is None), name
        if twin_schema is not None:
            assert mine_schema.get(MARK) == twin_schema.get(MARK), name
        tags = ((twin.meta or {}).get("fastmcp") or {}).get("tags") or None
        assert ((mine.meta or {}).get("fastmcp") or {}).get("tags") == tags, name
    assert ours["tools"]["items"].meta == {"owner": "ada"}
    assert ours["tools"]["items"].annotations.read_only_hint is True


def test_filtered_disabled_and_excluded(served: AppServer) -> None:
    async def run() -> None:
        async with fastmcp.Client(served.url) as client:
            tools = {t.name: t for t in await client.list_tools()}
            assert "secret" not in tools and "off" not in tools
            assert list(tools["greet"].input_schema["properties"]) == ["name"]
            assert (await client.call_tool("greet", {"name": "a"})).data == "a by system"
            for name in ("secret", "off"):
                with pytest.raises(Exception, match=f"Unknown tool: {name}"):
                    await client.call_tool(name, {})

    asyncio.run(run())
