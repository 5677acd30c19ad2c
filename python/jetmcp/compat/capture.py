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
import importlib.abc
import importlib.machinery
import io
import sys
from collections.abc import Iterator, Sequence
from types import ModuleType
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


def _patch(module_name: str, saved: list[tuple[Any, str, Any]]) -> None:
    """Stand in for the entry points of ``module_name`` (once imported), noting what was
    there in ``saved``."""
    module = sys.modules.get(module_name)
    for name, class_name, methods in ENTRY_POINTS:
        if name != module_name:
            continue
        cls = getattr(module, class_name, None) if module is not None else None
        if not isinstance(cls, type):
            continue
        for method in methods:
            # Patched where it is defined (a mixin, for fastmcp), for the block only.
            owner = next((k for k in cls.__mro__ if method in k.__dict__), None)
            if owner is not None and not any(o is owner and m == method for o, m, _ in saved):
                saved.append((owner, method, owner.__dict__[method]))
                setattr(owner, method, _stand_in(method))


class _PatchingLoader(importlib.abc.Loader):
    """A framework module's own loader, followed by :func:`_patch` once it has run."""

    def __init__(self, loader: importlib.abc.Loader, saved: list[tuple[Any, str, Any]]) -> None:
        self._loader = loader
        self._saved = saved

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        _patch(module.__name__, self._saved)


class _OnImport(importlib.abc.MetaPathFinder):
    """Patches a framework's entry points as the program imports it (a console script's
    ``main()`` often imports its framework only when called)."""

    def __init__(self, saved: list[tuple[Any, str, Any]]) -> None:
        self._saved = saved
        self._watched = {name for name, _, _ in ENTRY_POINTS}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self._watched:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _PatchingLoader(spec.loader, self._saved)
                return spec
        return None


@contextlib.contextmanager
def capturing(argv: list[str] | None = None) -> Iterator[None]:
    """Within the block, starting a server raises :class:`Captured`; ``sys.argv`` is
    ``argv`` (a console script parses its own arguments). Frameworks already imported are
    patched at once, those the program imports within the block as they are imported;
    nothing is imported here."""
    saved: list[tuple[Any, str, Any]] = []
    for module_name in dict.fromkeys(name for name, _, _ in ENTRY_POINTS):
        _patch(module_name, saved)
    hook = _OnImport(saved)
    sys.meta_path.insert(0, hook)
    old = sys.argv, sys.stdin, sys.stdout
    if argv is not None:
        sys.argv = argv
    sys.stdin, sys.stdout = _empty_stream(), _empty_stream()
    try:
        yield
    finally:
        sys.argv, sys.stdin, sys.stdout = old
        if hook in sys.meta_path:
            sys.meta_path.remove(hook)
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
