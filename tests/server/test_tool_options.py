"""ToolOptions: the one declaration of a tool's options, checked the same way from the
decorator, ``add_tool`` and ``Tool``."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from jetmcp import Server
from jetmcp.server.options import ToolKeywords, ToolOptions
from jetmcp.server.tools import Tool


def test_keywords_name_every_option() -> None:
    assert list(ToolKeywords.__annotations__) == [f.name for f in dataclasses.fields(ToolOptions)]


def test_the_decorator_keeps_the_options_a_tool_was_registered_with() -> None:
    server = Server("t")

    @server.tool("renamed", title="T", timeout=2, ttl_ms=5, cache_scope="private")
    def f(x: int) -> int:
        return x

    tool = server.tools["renamed"]
    assert tool.options == ToolOptions(
        name="renamed", title="T", timeout=2, ttl_ms=5, cache_scope="private"
    )
    assert (tool.title, tool.timeout, tool.ttl_ms, tool.cache_scope) == ("T", 2.0, 5, "private")
    with pytest.raises(dataclasses.FrozenInstanceError):
        tool.options.title = "U"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"timeout": 0}, ValueError),
        ({"timeout": True}, ValueError),
        ({"task_support": "sometimes"}, ValueError),
        ({"input_schema": {"type": "array"}}, ValueError),
        ({"defer_task": True}, ValueError),
        ({"ttl_ms": -1}, ValueError),
        ({"no_such_option": 1}, TypeError),
    ],
)
def test_bad_options_are_refused_everywhere(options: dict[str, object], error: type) -> None:
    def f(x: int) -> int:
        return x

    server = Server("t")
    with pytest.raises(error):
        server.tool(**options)(f)  # type: ignore[call-overload]
    with pytest.raises(error):
        server.add_tool(f, **options)  # type: ignore[arg-type]
    with pytest.raises(error):
        Tool(f, **options)  # type: ignore[arg-type]
    assert server.tools == {}


def test_the_decorator_adds_no_options_of_its_own() -> None:
    # Server.tool, add_tool and Tool take the options as one **options: nothing to keep in step.
    for fn in (Server.tool, Server.add_tool, Tool.__init__):
        kinds = [p.kind for p in inspect.signature(fn).parameters.values()]
        assert kinds.count(inspect.Parameter.VAR_KEYWORD) == 1
        assert inspect.Parameter.KEYWORD_ONLY not in kinds
