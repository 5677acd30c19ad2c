"""The server API (decorators, schemas, result shaping) through its method handlers.

The handlers are called directly with a :class:`jetmcp.core.call.Call`, no transport involved; the
sink collects the notifications a call sends.
"""

from __future__ import annotations

import asyncio
import base64
from typing import Annotated, Any, TypedDict

import orjson
import pytest
from mcp.server.mcpserver import Context as SdkContext
from pydantic import BaseModel, Field

from harness.inprocess import ListSink
from jetmcp.core.call import Call, Session
from jetmcp.errors import INTERNAL_ERROR, INVALID_PARAMS, McpError, ToolError
from jetmcp.protocol.revisions import (
    R2024_11_05,
    R2025_03_26,
    R2025_06_18,
    R2025_11_25,
    REVISIONS,
    Revision,
)
from jetmcp.server import Audio, Context, Image, Server
from jetmcp.server.content import EmbeddedResource, ResourceLink
from jetmcp.server.prompts import AssistantMessage, UserMessage

LATEST = R2025_11_25
PNG = b"\x89PNG\r\n\x1a\nfake"


def make_call(
    method: str,
    revision: Revision = LATEST,
    *,
    meta: dict[str, Any] | None = None,
    session: Session | None = None,
    sink: ListSink | None = None,
    raw_id: bytes = b"7",
) -> Call:
    return Call(method, raw_id, revision, session, sink or ListSink(), meta)


def handle(
    server: Server,
    method: str,
    params: dict[str, Any] | None = None,
    revision: Revision = LATEST,
    **kw: Any,
) -> dict[str, Any]:
    call = make_call(method, revision, **kw)

    async def run() -> dict[str, Any]:
        result = server.handlers[method](params or {}, call)
        return result if isinstance(result, dict) else await result

    return asyncio.run(run())


def call_tool(
    server: Server, name: str, arguments: dict[str, Any] | None = None, **kw: Any
) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    return handle(server, "tools/call", params, **kw)


def mcp_error(server: Server, method: str, params: dict[str, Any], **kw: Any) -> McpError:
    with pytest.raises(McpError) as info:
        handle(server, method, params, **kw)
    return info.value


def listed_tool(server: Server, name: str, revision: Revision = LATEST) -> dict[str, Any]:
    tools = handle(server, "tools/list", revision=revision)["tools"]
    return next(t for t in tools if t["name"] == name)


# --------------------------------------------------------------------------- schemas


def test_schema_required_optional_defaults_and_descriptions() -> None:
    server = Server("s")

    @server.tool()
    def search(
        query: Annotated[str, Field(description="What to look for")],
        limit: int = 10,
        exact: bool | None = None,
        ctx: Context | None = None,
    ) -> str:
        """Search the catalogue.

        Longer explanation that is not part of the description.

        Args:
            limit: How many results at most.
        """
        return query

    tool = listed_tool(server, "search")
    # The whole docstring, as the official SDK publishes it (sections and indentation kept).
    assert tool["description"] == search.__doc__
    assert "Args:\n            limit: How many results at most." in tool["description"]
    schema = tool["inputSchema"]
    assert schema["type"] == "object"
    assert schema["required"] == ["query"]
    props = schema["properties"]
    assert list(props) == ["query", "limit", "exact"]  # Context is not an argument
    assert props["query"]["description"] == "What to look for"
    assert props["query"]["type"] == "string"
    assert props["limit"] == {
        "default": 10,
        "description": "How many results at most.",
        "title": "Limit",
        "type": "integer",
    }
    assert props["exact"]["default"] is None


def test_schema_unannotated_parameter_and_shadowing_name() -> None:
    server = Server("s")

    @server.tool()
    def legacy(x, json: str = "{}"):  # type: ignore[no-untyped-def]
        return f"{x} {json}"

    schema = listed_tool(server, "legacy")["inputSchema"]
    assert schema["properties"]["x"] == {"title": "x", "type": "string"}
    assert "json" in schema["properties"]
    assert call_tool(server, "legacy", {"x": "a", "json": "b"})["content"][0]["text"] == "a b"


def test_context_detected_by_class_name() -> None:
    """Code written against the official SDK annotates its own ``Context`` class."""
    server = Server("s")

    @server.tool()
    async def progress(n: int, ctx: SdkContext) -> str:
        await ctx.report_progress(1, n)
        return type(ctx).__name__

    assert list(listed_tool(server, "progress")["inputSchema"]["properties"]) == ["n"]
    sink = ListSink()
    result = call_tool(server, "progress", {"n": 2}, meta={"progressToken": "p"}, sink=sink)
    assert result["content"][0]["text"] == "Context"
    assert sink.messages[0]["params"] == {"progressToken": "p", "progress": 1, "total": 2}

    # A Context imported only for type checking stays a string that cannot be evaluated.
    @server.tool()
    def hidden(ctx: fastmcp.Context) -> str:  # type: ignore[name-defined]  # noqa: F821
        return type(ctx).__name__

    assert listed_tool(server, "hidden")["inputSchema"]["properties"] == {}
    assert call_tool(server, "hidden")["content"][0]["text"] == "Context"


def test_bare_and_named_decorators() -> None:
    server = Server("s")

    @server.tool
    def bare() -> str:
        return "bare"

    @server.tool("renamed")
    def original() -> str:
        return "renamed"

    @server.prompt
    def p() -> str:
        return "x"

    def plain() -> str:
        return "plain"

    server.tool(plain, name="direct", title="Direct")

    assert bare() == "bare"  # the decorator hands the function back
    assert [t["name"] for t in handle(server, "tools/list")["tools"]] == [
        "bare",
        "renamed",
        "direct",
    ]
    assert listed_tool(server, "direct")["title"] == "Direct"
    assert call_tool(server, "renamed")["content"][0]["text"] == "renamed"
    assert handle(server, "prompts/list")["prompts"][0]["name"] == "p"
    with pytest.raises(TypeError):
        server.resource(bare)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- tools/call


def test_validation_failure_is_a_tool_error() -> None:
    server = Server("s")

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    result = call_tool(server, "add", {"a": 1})
    assert result["isError"] is True
    assert "structuredContent" not in result
    assert "b" in result["content"][0]["text"]
    assert "Field required" in result["content"][0]["text"]
    bad = call_tool(server, "add", {"a": "one", "b": 2})
    assert bad["isError"] is True
    # Lax conversion like the SDK: "2" is the integer 2.
    assert call_tool(server, "add", {"a": "1", "b": 2})["content"][0]["text"] == "3"


def test_json_string_arguments_are_parsed() -> None:
    server = Server("s")

    @server.tool()
    def total(values: list[int]) -> int:
        return sum(values)

    assert call_tool(server, "total", {"values": "[1, 2, 3]"})["content"][0]["text"] == "6"


@pytest.mark.parametrize("masked", [True, False])
def test_exception_is_a_tool_error_and_mcp_error_is_not(masked: bool) -> None:
    server = Server("s", mask_error_details=masked)

    @server.tool()
    async def boom() -> str:
        raise ValueError("it broke")

    @server.tool()
    def shown() -> str:
        raise ToolError("said on purpose")

    @server.tool()
    def protocol() -> str:
        raise McpError(-32001, "custom", data={"x": 1})

    # Unexpected exceptions are masked by default, with the SDK 2.x text.
    assert call_tool(server, "boom") == {
        "content": [
            {"type": "text", "text": "Error executing tool boom" if masked else "it broke"}
        ],
        "isError": True,
    }
    assert call_tool(server, "shown") == {
        "content": [{"type": "text", "text": "said on purpose"}],
        "isError": True,
    }
    error = mcp_error(server, "tools/call", {"name": "protocol"})
    assert (error.code, error.message, error.data) == (-32001, "custom", {"x": 1})


def test_unknown_tool_and_bad_arguments_are_protocol_errors() -> None:
    server = Server("s")

    @server.tool()
    def t() -> None:
        return None

    assert mcp_error(server, "tools/call", {"name": "nope"}).code == INVALID_PARAMS
    assert mcp_error(server, "tools/call", {"name": "t", "arguments": [1]}).code == INVALID_PARAMS


@pytest.mark.parametrize("revision", REVISIONS)
def test_structured_output_only_where_the_revision_has_it(revision: Revision) -> None:
    server = Server("s")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers"""
        return a + b

    result = call_tool(server, "add", {"a": 1, "b": 2}, revision=revision)
    assert result["content"] == [{"type": "text", "text": "3"}]
    assert result["isError"] is False
    tool = listed_tool(server, "add", revision)
    if revision.structured_output:
        assert list(result) == ["content", "structuredContent", "isError"]
        assert result["structuredContent"] == {"result": 3}
        assert tool["outputSchema"]["properties"]["result"]["type"] == "integer"
        assert tool["outputSchema"]["required"] == ["result"]
    else:
        assert list(result) == ["content", "isError"]
        assert "outputSchema" not in tool


class Weather(BaseModel):
    city: str
    celsius: float = Field(alias="degreesCelsius")


class Point(TypedDict):
    x: int
    y: int


def test_model_typeddict_and_dict_returns() -> None:
    server = Server("s")

    @server.tool()
    def weather(city: str) -> Weather:
        return Weather(city=city, degreesCelsius=21.5)

    @server.tool()
    def point() -> Point:
        return {"x": 1, "y": 2}

    @server.tool()
    def scores() -> dict[str, int]:
        return {"a": 1}

    @server.tool()
    def untyped():  # type: ignore[no-untyped-def]
        return {"k": [1, 2]}

    result = call_tool(server, "weather", {"city": "Oslo"})
    assert result["structuredContent"] == {"city": "Oslo", "degreesCelsius": 21.5}
    assert orjson.loads(result["content"][0]["text"]) == result["structuredContent"]
    schema = listed_tool(server, "weather")["outputSchema"]
    assert schema["type"] == "object"
    assert set(schema["properties"]) == {"city", "degreesCelsius"}

    assert call_tool(server, "point")["structuredContent"] == {"x": 1, "y": 2}
    assert listed_tool(server, "point")["outputSchema"]["required"] == ["x", "y"]

    assert call_tool(server, "scores")["structuredContent"] == {"a": 1}
    assert listed_tool(server, "scores")["outputSchema"]["type"] == "object"

    # No annotation: no outputSchema, but a dict is still given as structured content.
    loose = call_tool(server, "untyped")
    assert "outputSchema" not in listed_tool(server, "untyped")
    assert loose["structuredContent"] == {"k": [1, 2]}
    assert loose["content"][0]["text"] == '{\n  "k": [\n    1,\n    2\n  ]\n}'
    old = call_tool(server, "untyped", revision=R2025_03_26)
    assert "structuredContent" not in old


def test_list_and_none_returns_and_structured_output_off() -> None:
    server = Server("s")

    @server.tool()
    def names() -> list[str]:
        return ["a", "b"]

    @server.tool()
    def nothing() -> None:
        return None

    @server.tool(structured_output=False)
    def plain() -> dict[str, int]:
        return {"a": 1}

    listed = call_tool(server, "names")
    assert listed["content"] == [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    assert listed["structuredContent"] == {"result": ["a", "b"]}
    none = call_tool(server, "nothing")
    assert none["content"] == []
    assert none["isError"] is False
    off = call_tool(server, "plain")
    assert "structuredContent" not in off
    assert "outputSchema" not in listed_tool(server, "plain")


def test_output_not_matching_schema_is_a_tool_error() -> None:
    server = Server("s")

    @server.tool()
    def liar() -> int:
        return "not a number"  # type: ignore[return-value]

    result = call_tool(server, "liar")
    assert result["isError"] is True
    assert "output schema" in result["content"][0]["text"]
    # Revisions without structured output do not check it.
    assert call_tool(server, "liar", revision=R2025_03_26)["isError"] is False


def test_content_blocks_and_degrading() -> None:
    server = Server("s")

    @server.tool()
    def media() -> list[str | Image | Audio | ResourceLink | EmbeddedResource]:
        return [
            "caption",
            Image(data=PNG),
            Audio(data=b"RIFF", format="wav"),
            ResourceLink("file:///a.txt", "a.txt", mime_type="text/plain"),
            EmbeddedResource("mem://x", text="inline", mime_type="text/plain"),
        ]

    assert "outputSchema" not in listed_tool(server, "media")
    new = call_tool(server, "media")
    assert "structuredContent" not in new
    assert [b["type"] for b in new["content"]] == [
        "text",
        "image",
        "audio",
        "resource_link",
        "resource",
    ]
    assert new["content"][1] == {
        "type": "image",
        "data": base64.b64encode(PNG).decode(),
        "mimeType": "image/png",
    }
    assert new["content"][2]["mimeType"] == "audio/wav"
    assert new["content"][4]["resource"] == {
        "uri": "mem://x",
        "mimeType": "text/plain",
        "text": "inline",
    }

    old = call_tool(server, "media", revision=R2024_11_05)
    assert [b["type"] for b in old["content"]] == ["text", "image", "text", "text", "resource"]
    assert "file:///a.txt" in old["content"][3]["text"]
    mid = call_tool(server, "media", revision=R2025_03_26)
    assert [b["type"] for b in mid["content"]] == ["text", "image", "audio", "text", "resource"]


def test_sdk_content_types_pass_through() -> None:
    from mcp_types import TextContent

    server = Server("s")

    @server.tool()
    def sdk() -> TextContent:
        return TextContent(type="text", text="from the SDK")

    result = call_tool(server, "sdk")
    assert result == {"content": [{"type": "text", "text": "from the SDK"}], "isError": False}


def test_sync_and_async_tools() -> None:
    server = Server("s")

    @server.tool()
    def sync_tool(x: int) -> str:
        return f"sync {x}"

    @server.tool()
    async def async_tool(x: int) -> str:
        await asyncio.sleep(0)
        return f"async {x}"

    assert call_tool(server, "sync_tool", {"x": 1})["content"][0]["text"] == "sync 1"
    assert call_tool(server, "async_tool", {"x": 2})["content"][0]["text"] == "async 2"


def test_bool_and_float_results_are_json_text() -> None:
    server = Server("s")

    @server.tool()
    def yes() -> bool:
        return True

    @server.tool()
    def half() -> float:
        return 0.5

    assert call_tool(server, "yes")["content"][0]["text"] == "true"
    assert call_tool(server, "yes")["structuredContent"] == {"result": True}
    assert call_tool(server, "half")["content"][0]["text"] == "0.5"


# --------------------------------------------------------------------------- listing shapes


def _rich_server() -> Server:
    server = Server(
        "rich",
        version="2.0",
        instructions="hi",
        title="Rich",
        website_url="https://example.com",
        icons=[{"src": "https://example.com/i.png", "mimeType": "image/png"}],
    )

    @server.tool(
        title="Adder",
        annotations={"readOnlyHint": True},
        icons=[{"src": "https://example.com/a.png"}],
        meta={"k": "v"},
    )
    def add(a: int, b: int) -> int:
        return a + b

    @server.resource("mem://r", title="R", icons=[{"src": "https://example.com/r.png"}])
    def r() -> str:
        return "r"

    @server.prompt(title="P", icons=[{"src": "https://example.com/p.png"}])
    def p() -> str:
        return "p"

    return server


def test_revision_shaping_of_listings() -> None:
    server = _rich_server()
    old = listed_tool(server, "add", R2024_11_05)
    assert list(old) == ["name", "description", "inputSchema"]
    assert list(listed_tool(server, "add", R2025_03_26)) == [
        "name",
        "description",
        "inputSchema",
        "annotations",
    ]
    assert list(listed_tool(server, "add", R2025_06_18)) == [
        "name",
        "title",
        "description",
        "inputSchema",
        "outputSchema",
        "annotations",
        "_meta",
    ]
    newest = listed_tool(server, "add", R2025_11_25)
    assert list(newest) == [
        "name",
        "title",
        "description",
        "inputSchema",
        "outputSchema",
        "icons",
        "annotations",
        "_meta",
    ]
    assert newest["annotations"] == {"readOnlyHint": True}

    resource_old = handle(server, "resources/list", revision=R2024_11_05)["resources"][0]
    assert "title" not in resource_old
    assert "icons" not in resource_old
    resource_new = handle(server, "resources/list", revision=R2025_11_25)["resources"][0]
    assert resource_new["title"] == "R"
    assert resource_new["icons"] == [{"src": "https://example.com/r.png"}]
    assert resource_new["mimeType"] == "text/plain"

    prompt_mid = handle(server, "prompts/list", revision=R2025_06_18)["prompts"][0]
    assert prompt_mid["title"] == "P"
    assert "icons" not in prompt_mid
    prompt_old = handle(server, "prompts/list", revision=R2024_11_05)["prompts"][0]
    assert "title" not in prompt_old


def test_server_info_and_capabilities() -> None:
    server = _rich_server()
    assert server.server_info(R2024_11_05) == {"name": "rich", "version": "2.0"}
    assert server.server_info(R2025_06_18) == {"name": "rich", "title": "Rich", "version": "2.0"}
    assert server.server_info(R2025_11_25) == {
        "name": "rich",
        "title": "Rich",
        "version": "2.0",
        "websiteUrl": "https://example.com",
        "icons": [{"src": "https://example.com/i.png", "mimeType": "image/png"}],
    }
    assert server.instructions == "hi"
    base = {
        "logging": {},
        "prompts": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": True},
        "tools": {"listChanged": True},
    }
    assert server.capabilities(R2024_11_05) == base
    for revision in (R2025_03_26, R2025_06_18):
        assert server.capabilities(revision) == {"completions": {}, **base}
    assert server.capabilities(R2025_11_25) == {
        "completions": {},
        **base,
        "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
    }


def test_annotation_objects_with_model_dump() -> None:
    from mcp_types import ToolAnnotations

    server = Server("s")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False))
    def t() -> str:
        return ""

    assert listed_tool(server, "t")["annotations"] == {
        "readOnlyHint": True,
        "destructiveHint": False,
    }


# --------------------------------------------------------------------------- resources


def _resource_server(mask_error_details: bool = True) -> Server:
    server = Server("s", mask_error_details=mask_error_details)

    @server.resource("mem://text")
    def text() -> str:
        """Some text"""
        return "hello"

    @server.resource("mem://bytes", mime_type="image/png")
    def data() -> bytes:
        return PNG

    @server.resource("mem://json")
    def config() -> dict[str, Any]:
        return {"debug": True}

    @server.resource("mem://items/{id}/{part}")
    async def item(id: int, part: str) -> str:
        return f"item {id + 1} {part}"

    @server.resource("mem://files/{+path}", mime_type="text/plain")
    def file(path: str, ctx: Context) -> str:
        return f"file {path} for {ctx.request_id}"

    @server.resource("mem://broken")
    def broken() -> str:
        raise OSError("disk on fire")

    return server


def test_resource_listings() -> None:
    server = _resource_server()
    resources = handle(server, "resources/list")["resources"]
    assert [r["uri"] for r in resources] == [
        "mem://text",
        "mem://bytes",
        "mem://json",
        "mem://broken",
    ]
    assert resources[0] == {
        "name": "text",
        "uri": "mem://text",
        "description": "Some text",
        "mimeType": "text/plain",
    }
    assert resources[2]["mimeType"] == "application/json"
    templates = handle(server, "resources/templates/list")["resourceTemplates"]
    assert [t["uriTemplate"] for t in templates] == [
        "mem://items/{id}/{part}",
        "mem://files/{+path}",
    ]
    assert templates[0]["name"] == "item"


def test_resource_reads() -> None:
    server = _resource_server()
    assert handle(server, "resources/read", {"uri": "mem://text"}) == {
        "contents": [{"uri": "mem://text", "mimeType": "text/plain", "text": "hello"}]
    }
    blob = handle(server, "resources/read", {"uri": "mem://bytes"})["contents"][0]
    assert blob == {
        "uri": "mem://bytes",
        "mimeType": "image/png",
        "blob": base64.b64encode(PNG).decode(),
    }
    as_json = handle(server, "resources/read", {"uri": "mem://json"})["contents"][0]
    assert as_json["mimeType"] == "application/json"
    assert orjson.loads(as_json["text"]) == {"debug": True}
    item = handle(server, "resources/read", {"uri": "mem://items/41/a%2Fb"})["contents"][0]
    assert item == {"uri": "mem://items/41/a%2Fb", "mimeType": "text/plain", "text": "item 42 a/b"}
    file = handle(server, "resources/read", {"uri": "mem://files/x/y.txt"})["contents"][0]
    assert file["text"] == "file x/y.txt for 7"


@pytest.mark.parametrize("revision", REVISIONS)
def test_resource_not_found(revision: Revision) -> None:
    server = _resource_server()
    uri = "mem://missing"
    error = mcp_error(server, "resources/read", {"uri": uri}, revision=revision)
    assert error.code == revision.resource_not_found_code
    assert error.message == f"Resource not found: {uri}"
    assert error.data == {"uri": uri}
    # A template's segment does not swallow slashes.
    other = mcp_error(server, "resources/read", {"uri": "mem://items/1/2/3"}, revision=revision)
    assert other.code == revision.resource_not_found_code


def test_resource_errors() -> None:
    server = _resource_server()
    bad = mcp_error(server, "resources/read", {"uri": "mem://items/x/y"})
    assert bad.code == INVALID_PARAMS
    assert bad.data == {"uri": "mem://items/x/y"}
    broken = mcp_error(server, "resources/read", {"uri": "mem://broken"})
    assert broken.code == INTERNAL_ERROR
    # The exception's text stays in the log unless the server asks to show it.
    assert broken.message == "Error reading resource mem://broken"
    shown = mcp_error(_resource_server(False), "resources/read", {"uri": "mem://broken"})
    assert shown.message == "Error reading resource mem://broken: disk on fire"
    assert mcp_error(server, "resources/read", {}).code == INVALID_PARAMS


def test_template_parameters_must_match() -> None:
    server = Server("s")
    with pytest.raises(TypeError):

        @server.resource("mem://{a}")
        def wrong(b: str) -> str:
            return b

    with pytest.raises(TypeError):

        @server.resource("mem://static")
        def needs(b: str) -> str:
            return b

    with pytest.raises(ValueError):

        @server.resource("mem://{?q}")
        def query(q: str) -> str:
            return q


def test_context_reads_resources() -> None:
    server = _resource_server()

    @server.tool()
    async def reader(uri: str, ctx: Context) -> str:
        contents = await ctx.read_resource(uri)
        return str(contents[0].content)

    assert call_tool(server, "reader", {"uri": "mem://items/1/z"})["content"][0]["text"] == (
        "item 2 z"
    )


# --------------------------------------------------------------------------- prompts


def _prompt_server() -> Server:
    server = Server("s")

    @server.prompt()
    def greet(name: str, punctuation: str = "!") -> str:
        """Greet someone.

        Args:
            name: Who to greet.
        """
        return f"Hello, {name}{punctuation}"

    @server.prompt(name="chat", description="A short exchange")
    def conversation(topic: str) -> list[Any]:
        return [
            UserMessage(f"Tell me about {topic}"),
            AssistantMessage("Gladly."),
            {"role": "user", "content": "Go on"},
            {"role": "user", "content": {"type": "text", "text": "raw block"}},
            UserMessage(Image(data=PNG)),
        ]

    @server.prompt()
    def count(n: int) -> str:
        return "x" * n

    @server.prompt()
    def bad() -> str:
        raise RuntimeError("nope")

    return server


GREET_DOC = "Greet someone.\n\n        Args:\n            name: Who to greet.\n        "


def test_prompt_listing() -> None:
    prompts = handle(_prompt_server(), "prompts/list")["prompts"]
    assert [p["name"] for p in prompts] == ["greet", "chat", "count", "bad"]
    assert prompts[0] == {
        "name": "greet",
        "description": GREET_DOC,
        "arguments": [
            {"name": "name", "description": "Who to greet.", "required": True},
            {"name": "punctuation", "required": False},
        ],
    }
    assert prompts[1]["description"] == "A short exchange"


def test_prompt_get() -> None:
    server = _prompt_server()
    assert handle(server, "prompts/get", {"name": "greet", "arguments": {"name": "Ann"}}) == {
        "description": GREET_DOC,
        "messages": [{"role": "user", "content": {"type": "text", "text": "Hello, Ann!"}}],
    }
    chat = handle(server, "prompts/get", {"name": "chat", "arguments": {"topic": "owls"}})
    messages = chat["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "user", "user"]
    assert messages[0]["content"] == {"type": "text", "text": "Tell me about owls"}
    assert messages[2]["content"] == {"type": "text", "text": "Go on"}
    assert messages[3]["content"] == {"type": "text", "text": "raw block"}
    assert messages[4]["content"]["type"] == "image"
    count = handle(server, "prompts/get", {"name": "count", "arguments": {"n": "3"}})
    assert count["messages"][0]["content"]["text"] == "xxx"


def test_prompt_errors() -> None:
    server = _prompt_server()
    missing = mcp_error(server, "prompts/get", {"name": "greet"})
    assert missing.code == INVALID_PARAMS
    assert "name" in missing.message
    assert mcp_error(server, "prompts/get", {"name": "nope"}).code == INVALID_PARAMS
    invalid = mcp_error(server, "prompts/get", {"name": "count", "arguments": {"n": "x"}})
    assert invalid.code == INVALID_PARAMS
    assert mcp_error(server, "prompts/get", {"name": "bad"}).code == INTERNAL_ERROR


# --------------------------------------------------------------------------- pagination


def test_pagination() -> None:
    server = Server("s", page_size=2)
    for i in range(5):
        server.add_tool(lambda i=i: str(i), name=f"t{i}")
    seen: list[str] = []
    cursors: list[str] = []
    params: dict[str, Any] = {}
    while True:
        page = handle(server, "tools/list", params)
        seen += [t["name"] for t in page["tools"]]
        if "nextCursor" not in page:
            break
        cursors.append(page["nextCursor"])
        params = {"cursor": page["nextCursor"]}
    assert seen == ["t0", "t1", "t2", "t3", "t4"]
    assert len(cursors) == 2
    for bad in ("not base64!", "LTE=", 5, base64.b64encode(b"x").decode()):
        assert mcp_error(server, "tools/list", {"cursor": bad}).code == INVALID_PARAMS


def test_no_pagination_without_page_size() -> None:
    server = Server("s")
    for i in range(30):
        server.add_tool(lambda i=i: str(i), name=f"t{i}")
    page = handle(server, "tools/list")
    assert len(page["tools"]) == 30
    assert "nextCursor" not in page
    assert handle(server, "resources/list") == {"resources": []}
    assert handle(server, "resources/templates/list") == {"resourceTemplates": []}
    assert handle(server, "prompts/list") == {"prompts": []}


# --------------------------------------------------------------------------- notifications


def _notifying_server() -> Server:
    server = Server("s")

    @server.tool()
    async def work(ctx: Context) -> str:
        await ctx.report_progress(0, 100)
        await ctx.report_progress(50, 100, message="half")
        await ctx.debug("starting")
        await ctx.info("working", logger_name="worker")
        await ctx.log("error", {"code": 1})
        return f"{ctx.request_id} {ctx.session_id} {ctx.protocol_version}"

    return server


def test_progress_notifications() -> None:
    server = _notifying_server()
    sink = ListSink()
    result = call_tool(server, "work", meta={"progressToken": 9}, sink=sink)
    assert result["content"][0]["text"] == f"7 None {LATEST.version}"
    progress = [m for m in sink.messages if m["method"] == "notifications/progress"]
    assert [m["params"] for m in progress] == [
        {"progressToken": 9, "progress": 0, "total": 100},
        {"progressToken": 9, "progress": 50, "total": 100, "message": "half"},
    ]
    assert all(m["jsonrpc"] == "2.0" and "id" not in m for m in sink.messages)


def test_progress_message_dropped_on_2024_11_05_and_no_token_no_progress() -> None:
    server = _notifying_server()
    sink = ListSink()
    call_tool(server, "work", meta={"progressToken": "t"}, sink=sink, revision=R2024_11_05)
    progress = [m["params"] for m in sink.messages if m["method"] == "notifications/progress"]
    assert progress[1] == {"progressToken": "t", "progress": 50, "total": 100}
    quiet = ListSink()
    call_tool(server, "work", sink=quiet)
    assert not [m for m in quiet.messages if m["method"] == "notifications/progress"]


def test_log_notifications_follow_the_session_level() -> None:
    server = _notifying_server()
    sink = ListSink()
    call_tool(server, "work", sink=sink)
    logs = [m["params"] for m in sink.messages if m["method"] == "notifications/message"]
    assert logs == [
        {"level": "debug", "data": "starting"},
        {"level": "info", "logger": "worker", "data": "working"},
        {"level": "error", "data": {"code": 1}},
    ]
    session = Session("sess-1", LATEST)
    session.log_level = "info"
    filtered = ListSink()
    result = call_tool(server, "work", sink=filtered, session=session)
    assert result["content"][0]["text"] == f"7 sess-1 {LATEST.version}"
    levels = [m["params"]["level"] for m in filtered.messages if "level" in m["params"]]
    assert levels == ["info", "error"]


def test_context_client_details() -> None:
    server = Server("s")

    @server.tool()
    def who(ctx: Context) -> dict[str, Any]:
        return {"caps": ctx.client_capabilities, "params": ctx.client_params}

    session = Session("x", R2025_06_18, {"sampling": {}}, {"name": "c", "version": "1"})
    result = call_tool(server, "who", session=session, revision=R2025_06_18)
    assert result["structuredContent"] == {
        "caps": {"sampling": {}},
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {"sampling": {}},
            "clientInfo": {"name": "c", "version": "1"},
        },
    }


# --------------------------------------------------------------------------- runtime changes


def test_runtime_add_and_remove() -> None:
    server = Server("s")
    changes: list[str] = []
    server.add_change_listener(changes.append)

    @server.tool()
    def one() -> str:
        return "1"

    assert [t["name"] for t in handle(server, "tools/list")["tools"]] == ["one"]
    server.add_tool(lambda: "2", name="two")
    assert [t["name"] for t in handle(server, "tools/list")["tools"]] == ["one", "two"]
    server.add_tool(lambda: "one again", name="one", description="replaced")
    tools = handle(server, "tools/list")["tools"]
    assert [(t["name"], t["description"]) for t in tools] == [("one", "replaced"), ("two", "")]
    server.remove_tool("one")
    assert [t["name"] for t in handle(server, "tools/list")["tools"]] == ["two"]
    assert mcp_error(server, "tools/call", {"name": "one"}).code == INVALID_PARAMS
    with pytest.raises(KeyError):
        server.remove_tool("one")

    server.add_resource(lambda: "x", "mem://x", name="x")
    server.add_resource(lambda id: id, "mem://t/{id}", name="t")
    assert len(handle(server, "resources/list")["resources"]) == 1
    assert len(handle(server, "resources/templates/list")["resourceTemplates"]) == 1
    server.remove_resource("mem://t/{id}")
    assert handle(server, "resources/templates/list")["resourceTemplates"] == []
    server.add_prompt(lambda: "hi", name="hello")
    assert handle(server, "prompts/list")["prompts"][0]["name"] == "hello"
    server.remove_prompt("hello")
    assert handle(server, "prompts/list")["prompts"] == []
    assert changes == [
        "tools",
        "tools",
        "tools",
        "tools",
        "resources",
        "resources",
        "resources",
        "prompts",
        "prompts",
    ]


def test_listings_are_cached_per_revision() -> None:
    server = _rich_server()
    first = handle(server, "tools/list", revision=R2025_06_18)["tools"]
    again = handle(server, "tools/list", revision=R2025_06_18)["tools"]
    other = handle(server, "tools/list", revision=R2024_11_05)["tools"]
    assert first is again
    assert first is not other


# --------------------------------------------------------------------------- the demo app


def test_demo_app() -> None:
    from jetmcp.demo import app

    names = [t["name"] for t in handle(app, "tools/list")["tools"]]
    assert names == ["add", "echo", "sleep", "fail"]
    assert listed_tool(app, "add")["description"] == "Add two integers"
    add = call_tool(app, "add", {"a": 1, "b": 2}, revision=R2025_06_18)
    assert add == {
        "content": [{"type": "text", "text": "3"}],
        "structuredContent": {"result": 3},
        "isError": False,
    }
    assert call_tool(app, "add", {"a": 1, "b": 2}, revision=R2025_03_26) == {
        "content": [{"type": "text", "text": "3"}],
        "isError": False,
    }
    assert call_tool(app, "echo", {"text": "hi"})["content"][0]["text"] == "hi"
    assert call_tool(app, "sleep", {"ms": 1})["content"][0]["text"] == "slept 1 ms"
    assert call_tool(app, "fail")["isError"] is True
    readme = handle(app, "resources/read", {"uri": "demo://readme"})["contents"][0]
    assert readme["mimeType"] == "text/markdown"
    item = handle(app, "resources/read", {"uri": "demo://items/42"})["contents"][0]
    assert "42" in item["text"]
    greet = handle(app, "prompts/get", {"name": "greet", "arguments": {"name": "Bo"}})
    assert greet["messages"][0]["content"]["text"] == "Hello, Bo!"


# --------------------------------------------------------------------------- the SDK's view


def test_results_validate_as_the_official_sdk_types() -> None:
    """Every result parses with the official SDK's models (what its clients do)."""
    import mcp_types as t

    server = _rich_server()
    resources = _resource_server()
    prompts = _prompt_server()

    @server.tool()
    def media() -> list[str | Image | Audio | ResourceLink | EmbeddedResource]:
        return ["x", Image(data=PNG), Audio(data=b"a"), ResourceLink("a://b", "b")]

    for revision in REVISIONS:
        t.ListToolsResult.model_validate(handle(server, "tools/list", revision=revision))
        for name, args in (("add", {"a": 1, "b": 2}), ("media", {}), ("add", {})):
            t.CallToolResult.model_validate(call_tool(server, name, args, revision=revision))
        t.ListResourcesResult.model_validate(handle(resources, "resources/list", revision=revision))
        t.ListResourceTemplatesResult.model_validate(
            handle(resources, "resources/templates/list", revision=revision)
        )
        for uri in ("mem://text", "mem://bytes", "mem://items/1/2"):
            read = handle(resources, "resources/read", {"uri": uri}, revision=revision)
            t.ReadResourceResult.model_validate(read)
        t.ListPromptsResult.model_validate(handle(prompts, "prompts/list", revision=revision))
        chat = {"name": "chat", "arguments": {"topic": "owls"}}
        t.GetPromptResult.model_validate(handle(prompts, "prompts/get", chat, revision=revision))
        t.Implementation.model_validate(server.server_info(revision))
        t.ServerCapabilities.model_validate(server.capabilities(revision))
