"""Finding the server a program *runs*: ``jetmcp run package.cli:main -- ARGS``.

Published servers mostly have no server object at module level: their console script
builds one and runs it (``server.run()``, ``asyncio.run(server.run_stdio_async())``,
``await server.run(read, write, options)`` inside ``stdio_server()``). :func:`capturing`
stands in for those entry points of every framework jetmcp adapts while the program's
function is called: the first one reached stops the program there and hands the server
over (:class:`Captured`), so jetmcp serves it instead, with its own transports. Meanwhile
stdin and stdout are empty stand-ins, so a program that opens the SDK's ``stdio_server()``
first reads nothing of the client's and writes nothing to it.
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Iterator
from typing import Any

#: (module, class, methods that start serving) of every framework jetmcp adapts.
ENTRY_POINTS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "mcp.server.mcpserver.server",
        "MCPServer",
        ("run", "run_stdio_async", "run_sse_async", "run_streamable_http_async"),
    ),
    (
        "mcp.server.fastmcp.server",
        "FastMCP",
        ("run", "run_stdio_async", "run_sse_async", "run_streamable_http_async"),
    ),
    ("mcp.server.lowlevel.server", "Server", ("run",)),
    (
        "fastmcp.server.server",
        "FastMCP",
        ("run", "run_async", "run_stdio_async", "run_http_async", "run_sse_async"),
    ),
    (
        "jetmcp.server.app",
        "Server",
        ("run", "run_stdio_async", "run_sse_async", "run_streamable_http_async"),
    ),
)


#: Where a captured low-level server keeps the ``InitializationOptions`` its program passed
#: to ``run(read, write, options)``: the handshake the program chose (the adapter uses it).
INIT_OPTIONS_ATTR = "_jetmcp_initialization_options"


class Captured(BaseException):
    """Raised where a program starts serving ``server`` (a BaseException, so the program's
    own ``except Exception`` handlers let it through)."""

    def __init__(self, server: Any) -> None:
        super().__init__(f"captured {type(server).__name__}")
        self.server = server


def _stand_in(name: str) -> Any:
    def serve(self: Any, *args: Any, **kwargs: Any) -> Any:
        options = kwargs.get("initialization_options", args[2] if len(args) > 2 else None)
        if name == "run" and options is not None and hasattr(options, "capabilities"):
            setattr(self, INIT_OPTIONS_ATTR, options)
        raise Captured(self)

    serve.__name__ = name
    return serve


def _empty_stream() -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8")


@contextlib.contextmanager
def capturing(argv: list[str] | None = None) -> Iterator[None]:
    """Within the block, starting a server raises :class:`Captured`; ``sys.argv`` is
    ``argv`` (a console script parses its own arguments). Only frameworks already imported
    (by the program's module) are patched: nothing is imported here."""
    saved: list[tuple[Any, str, Any]] = []
    for module_name, class_name, methods in ENTRY_POINTS:
        module = sys.modules.get(module_name)
        cls = getattr(module, class_name, None) if module is not None else None
        if not isinstance(cls, type):
            continue
        for method in methods:
            # Patched where it is defined (a mixin, for fastmcp), for the block only.
            owner = next((k for k in cls.__mro__ if method in k.__dict__), None)
            if owner is not None and not any(o is owner and m == method for o, m, _ in saved):
                saved.append((owner, method, owner.__dict__[method]))
                setattr(owner, method, _stand_in(method))
    old = sys.argv, sys.stdin, sys.stdout
    if argv is not None:
        sys.argv = argv
    sys.stdin, sys.stdout = _empty_stream(), _empty_stream()
    try:
        yield
    finally:
        sys.argv, sys.stdin, sys.stdout = old
        for owner, name, value in reversed(saved):
            setattr(owner, name, value)


def captured_in(exc: BaseException) -> Captured | None:
    """The :class:`Captured` that ``exc`` is or carries (task groups wrap it in exception
    groups; some programs re-raise it as the cause of another)."""
    seen: set[int] = set()
    stack = [exc]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, Captured):
            return current
        stack.extend(getattr(current, "exceptions", ()))
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                stack.append(linked)
    return None


__all__ = ["ENTRY_POINTS", "INIT_OPTIONS_ATTR", "Captured", "captured_in", "capturing"]
