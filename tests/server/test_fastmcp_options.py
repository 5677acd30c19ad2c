"""fastmcp's decorator options on jetmcp's own ``Server`` (issue 41 item 11): ``tags``,
``enabled`` (and ``tool.enable()``/``disable()``, ``server.enable``/``disable``),
``exclude_args``, ``output_schema``, ``meta``, ``annotations``, the server's
``include_tags``/``exclude_tags``, and the ``x-fastmcp-wrap-result`` mark on wrapped
outputs. Driven through ``jetmcp.Client(server)`` (the dispatcher and the extension's
routes, as a transport serves them); fastmcp's own client is in
tests/compat/dropin/test_fastmcp_client.py."""

from __future__ import annotations

from typing import Any

import pytest

from harness.inprocess import async_test
from jetmcp import Client, Server
from jetmcp.errors import INVALID_PARAMS, McpError
from jetmcp.server.tools import WRAP_MARK, Tool


def _server(**kw: Any) -> Server:
    server = Server("options", **kw)

    @server.tool(tags={"math", "public"}, meta={"owner": "ada", "fastmcp": {"x": 1}})
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool(tags={"admin"})
    def reset() -> str:
        return "reset"

    @server.tool(enabled=False)
    def hidden(a: int) -> int:
        return a

    @server.tool()
    def untagged() -> str:
        return "plain"

    return server


async def _names(client: Client) -> list[str]:
    return [t.name for t in (await client.list_tools()).tools]


async def _unknown(client: Client, name: str, arguments: dict[str, Any]) -> None:
    # A disabled or filtered-out tool is answered as an unknown one.
    with pytest.raises(McpError, match=f"Unknown tool: {name}") as caught:
        await client.request("tools/call", {"name": name, "arguments": arguments})
    assert caught.value.code == INVALID_PARAMS


def test_tags_are_listed_under_meta_fastmcp_and_meta_is_kept() -> None:
    @async_test
    async def run() -> None:
        async with Client(_server()) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert tools["add"].meta == {
                "owner": "ada",
                "fastmcp": {"x": 1, "tags": ["math", "public"]},
            }
            assert tools["reset"].meta == {"fastmcp": {"tags": ["admin"]}}
            assert tools["untagged"].meta is None  # no tags, no meta: nothing added

    run()


def test_a_disabled_tool_is_neither_listed_nor_callable_until_enabled() -> None:
    server = _server()

    @async_test
    async def run() -> None:
        async with Client(server) as client:
            assert await _names(client) == ["add", "reset", "untagged"]
            await _unknown(client, "hidden", {"a": 1})
            server.enable(names={"hidden"})
            assert "hidden" in await _names(client)
            assert (await client.call_tool("hidden", {"a": 4})).text == "4"
            tool = server.tools["add"]
            tool.disable()
            assert "add" not in await _names(client)
            await _unknown(client, "add", {"a": 1, "b": 2})
            tool.enable()
            assert (await client.call_tool("add", {"a": 1, "b": 2})).text == "3"
            server.disable(tags={"admin"})
            assert "reset" not in await _names(client)

    run()


@pytest.mark.parametrize(
    ("filters", "names"),
    [
        ({"include_tags": {"math"}}, ["add"]),
        ({"exclude_tags": {"admin"}}, ["add", "untagged"]),
        ({"include_tags": {"math", "admin"}, "exclude_tags": {"public"}}, ["reset"]),
        ({"include_tags": set()}, []),
    ],
)
def test_include_and_exclude_tags_filter_listings_and_calls(
    filters: dict[str, Any], names: list[str]
) -> None:
    @async_test
    async def run() -> None:
        async with Client(_server(**filters)) as client:
            assert await _names(client) == names
            for name, arguments in (("add", {"a": 1, "b": 2}), ("reset", {})):
                if name in names:
                    assert not (await client.call_tool(name, arguments)).is_error
                else:
                    await _unknown(client, name, arguments)

    run()


def test_exclude_args_hides_parameters_that_keep_their_defaults() -> None:
    server = Server("x")

    @server.tool(exclude_args=["user"])
    def greet(name: str, user: str = "system") -> str:
        return f"{name} by {user}"

    @async_test
    async def run() -> None:
        async with Client(server) as client:
            (tool,) = (await client.list_tools()).tools
            assert list(tool.input_schema["properties"]) == ["name"]
            assert (await client.call_tool("greet", {"name": "a"})).text == "a by system"

    run()

    def needs(user: str) -> str:
        return user

    with pytest.raises(ValueError, match="must have a default"):
        server.tool(exclude_args=["user"])(needs)
    with pytest.raises(ValueError, match="not a parameter"):
        server.tool(exclude_args=["nobody"])(needs)
    with pytest.raises(ValueError, match="collection of strings"):
        server.tool(exclude_args="user")(needs)


def test_output_schema_overrides_or_disables_the_annotation() -> None:
    server = Server("o")
    given = {"type": "object", "properties": {"n": {"type": "integer"}}}

    @server.tool(output_schema=given)
    def count() -> dict[str, int]:
        return {"n": 2}

    @server.tool(output_schema=None)
    def bare() -> int:
        return 3

    wrapped = {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
        WRAP_MARK: True,
    }

    @server.tool(output_schema=wrapped)
    def boxed() -> int:
        return 4

    @async_test
    async def run() -> None:
        async with Client(server, revision="2025-06-18") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert tools["count"].output_schema == given
            assert tools["bare"].output_schema is None
            assert tools["boxed"].output_schema == wrapped
            assert (await client.call_tool("count", {})).structured_content == {"n": 2}
            bare_result = await client.call_tool("bare", {})
            assert (bare_result.text, bare_result.structured_content) == ("3", None)
            assert (await client.call_tool("boxed", {})).structured_content == {"result": 4}

    run()
    with pytest.raises(ValueError, match="output_schema"):
        Tool(lambda: 1, output_schema={"type": "array"})
    with pytest.raises(ValueError, match="contradict"):
        Tool(lambda: 1, output_schema=given, structured_output=False)


def test_a_wrapped_output_carries_fastmcps_mark_and_an_object_one_does_not() -> None:
    def number() -> int:
        return 1

    def numbers() -> list[int]:
        return [1]

    def record() -> dict[str, int]:
        return {}

    for fn, marked in ((number, True), (numbers, True), (record, False)):
        schema = Tool(fn).output_schema
        assert schema is not None
        assert (schema.get(WRAP_MARK) is True) is marked, schema


def test_annotations_are_listed() -> None:
    server = Server("a")

    @server.tool(annotations={"readOnlyHint": True})
    def look() -> str:
        return ""

    @async_test
    async def run() -> None:
        async with Client(server) as client:
            (tool,) = (await client.list_tools()).tools
            assert tool.annotations == {"readOnlyHint": True}

    run()


def _components(**kw: Any) -> Server:
    server = Server("components", **kw)

    @server.resource("notes://public", tags={"public"}, meta={"owner": "ada"})
    def public() -> str:
        return "public"

    @server.resource("notes://admin", tags={"admin"})
    def admin() -> str:
        return "admin"

    @server.resource("notes://off", enabled=False)
    def off() -> str:
        return "off"

    @server.prompt(tags={"public"})
    def greet() -> str:
        return "hello"

    @server.prompt(enabled=False)
    def hidden() -> str:
        return "hidden"

    return server


def test_resources_and_prompts_take_tags_and_enabled() -> None:
    @async_test
    async def run() -> None:
        async with Client(_components()) as client:
            resources = {r.uri: r for r in (await client.list_resources()).resources}
            assert sorted(resources) == ["notes://admin", "notes://public"]
            assert resources["notes://public"].meta == {
                "owner": "ada",
                "fastmcp": {"tags": ["public"]},
            }
            prompts = {p.name: p for p in (await client.list_prompts()).prompts}
            assert sorted(prompts) == ["greet"]
            assert prompts["greet"].meta == {"fastmcp": {"tags": ["public"]}}
            with pytest.raises(McpError):
                await client.read_resource("notes://off")
            with pytest.raises(McpError):
                await client.get_prompt("hidden")

    run()


def test_tag_filters_apply_to_resources_and_prompts() -> None:
    @async_test
    async def run() -> None:
        async with Client(_components(exclude_tags={"admin"})) as client:
            uris = sorted(r.uri for r in (await client.list_resources()).resources)
            assert uris == ["notes://public"]
            with pytest.raises(McpError):
                await client.read_resource("notes://admin")
        async with Client(_components(include_tags={"admin"})) as client:
            uris = sorted(r.uri for r in (await client.list_resources()).resources)
            assert uris == ["notes://admin"]
            assert (await client.list_prompts()).prompts == []

    run()
