"""Finding the server ``jetmcp run TARGET`` serves.

``TARGET`` is ``module``, ``module:attr``, ``path/to/file.py`` or ``path/to/file.py:attr``;
``attr`` may be a factory: ``module:create_app()`` (literal arguments allowed:
``module:create_server('UTC', debug=True)``), or any callable that returns a server.
Without ``attr``, the module's ``mcp``, ``server`` or ``app`` is taken (the names the
official SDK's and fastmcp's own runners look for), then its only server object, then a
factory named ``create_server``/``create_app``/``get_server``/``make_server``. The working
directory is put on ``sys.path`` first, for every transport, and a file's own folder too,
so a server file imports its neighbours as it does when run directly.

Any object :func:`jetmcp.compat.adapt` accepts may be named: a :class:`jetmcp.Server`, the
official SDK's ``FastMCP`` (1.x), ``MCPServer`` (2.x) and low-level ``Server``, fastmcp's
``FastMCP``. Only the face imports it: the CLI, and the worker factory of
:mod:`jetmcp.run.serving`.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from jetmcp.errors import LoadError
from jetmcp.run.rundir import WARNED, claim

if TYPE_CHECKING:
    from jetmcp.server.app import Server

#: Where ``jetmcp run`` was started, for worker processes that start elsewhere (Granian's).
WORKDIR_ENV = "JETMCP_WORKDIR"
#: The arguments after ``--`` (JSON), the ``sys.argv[1:]`` a called target sees.
TARGET_ARGV_ENV = "JETMCP_TARGET_ARGV"
#: Attribute names tried, in order, when a target names no attribute.
SERVER_NAMES = ("mcp", "server", "app")
#: Factory names tried after them.
FACTORY_NAMES = ("create_server", "create_app", "get_server", "make_server")


def _restore_workdir() -> None:
    """Back to where ``jetmcp run`` was started, in a worker that started elsewhere."""
    workdir = os.environ.get(WORKDIR_ENV)
    if workdir and os.getcwd() != workdir:
        os.chdir(workdir)


def _path_entries(file: Path | None) -> None:
    """The working directory (and a target file's folder) at the front of ``sys.path``."""
    for entry in (os.getcwd(), str(file.parent.resolve()) if file is not None else None):
        if entry is not None and entry not in sys.path:
            sys.path.insert(0, entry)


def split_target(target: str) -> tuple[str, str | None]:
    """``(module or file, attribute or None)``. A Windows drive colon is not a separator."""
    if not target:
        raise LoadError("empty target: give module:attr or path/to/file.py")
    head, sep, tail = target.rpartition(":")
    if not sep or (len(head) == 1 and head.isalpha() and tail.startswith(("\\", "/"))):
        return target, None
    if not head:
        raise LoadError(f"{target!r} names no module or file before ':'")
    if not tail:
        raise LoadError(f"{target!r} names no attribute after ':'")
    return head, tail


def _is_file(source: str) -> bool:
    return source.endswith(".py") or os.sep in source or "/" in source


def _closest(word: str, candidates: list[str]) -> str:
    """`` (did you mean 'x'?)`` for the candidate closest to ``word``, else ''."""
    import difflib

    found = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return f" (did you mean {found[0]!r}?)" if found else ""


def _no_file(source: str) -> LoadError:
    """No such file, with the closest file of its folder."""
    path = Path(source)
    folder = path.parent if str(path.parent) else Path(".")
    try:
        names = [p.name for p in folder.iterdir() if p.suffix == ".py" or p.is_dir()]
    except OSError:
        names = []
    hint = _closest(path.name, names)
    if hint and str(path.parent) not in ("", "."):
        hint = hint.replace("'", f"'{path.parent}/", 1)
    return LoadError(f"no such file: {source}{hint}")


def _no_module(source: str) -> LoadError:
    """No such module, with the closest module or file of the working directory."""
    head, _, last = source.rpartition(".")
    names: list[str] = []
    if not head:
        try:
            for p in Path(".").iterdir():
                if p.suffix == ".py":
                    names.append(p.stem)
                elif (p / "__init__.py").is_file():
                    names.append(p.name)
        except OSError:
            pass
    return LoadError(f"no module named {source!r}{_closest(last, names)}")


def find_module(source: str) -> None:
    """Check, without importing anything, that ``source`` exists (for a quick refusal)."""
    if _is_file(source):
        if not Path(source).is_file():
            raise _no_file(source)
        return
    _path_entries(None)
    # Only the top-level name: finding ``pkg.mod`` would import ``pkg`` (its side effects
    # belong to the process that serves it).
    top = source.partition(".")[0]
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError) as exc:
        raise LoadError(f"cannot import {source!r}: {exc}") from None
    if spec is None:
        raise _no_module(top if top != source else source)


def import_source(source: str) -> ModuleType:
    """The module a file path or dotted name names, imported."""
    _restore_workdir()
    if _is_file(source):
        file = Path(source)
        if not file.is_file():
            raise _no_file(source)
        _path_entries(file)
        name = file.stem if file.stem.isidentifier() else "__jetmcp_target__"
        if name in sys.modules and getattr(sys.modules[name], "__file__", None) == str(
            file.resolve()
        ):
            return sys.modules[name]
        spec = importlib.util.spec_from_file_location(name, file.resolve())
        if spec is None or spec.loader is None:
            raise LoadError(f"cannot load {source} as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        return module
    _path_entries(None)
    try:
        return importlib.import_module(source)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (source == exc.name or source.startswith(exc.name + ".")):
            raise _no_module(source) from None
        raise


def is_server(obj: Any) -> bool:
    """Whether ``obj`` is a server jetmcp can serve (checked by class, nothing imported)."""
    from jetmcp.compat import kind_of

    return kind_of(obj) is not None


def target_argv() -> list[str]:
    """The arguments given after ``--`` to ``jetmcp run`` (exported for its workers)."""
    import json

    raw = os.environ.get(TARGET_ARGV_ENV)
    value = json.loads(raw) if raw else []
    return [str(v) for v in value] if isinstance(value, list) else []


def _call_factory(
    factory: Any, label: str, args: list[Any] | None = None, kwargs: dict[str, Any] | None = None
) -> Any:
    """What calling ``factory`` gives: the server it returns, or the server it starts to
    run (a console script's ``main``: :mod:`jetmcp.compat.capture`), called with
    ``sys.argv`` set to the arguments after ``--``."""
    from jetmcp.compat.capture import captured_in, capturing

    name = getattr(factory, "__name__", "target")
    try:
        with capturing([name, *target_argv()]):
            try:
                value = factory(*(args or []), **(kwargs or {}))
            except TypeError as exc:
                if exc.__traceback__ is not None and exc.__traceback__.tb_next is None:
                    raise LoadError(f"{label} could not be called: {exc}") from None
                raise
            if inspect.isawaitable(value):
                import asyncio

                value = asyncio.run(_awaited(value))
    except LoadError:
        raise
    except BaseException as exc:
        captured = captured_in(exc)
        if captured is None:
            raise
        return captured.server
    return value


async def _awaited(value: Any) -> Any:
    return await value


def _factory_call(attr: str, target: str) -> tuple[str, list[Any], dict[str, Any]] | None:
    """``(name, args, kwargs)`` for ``name(literal, ..., key=literal)``; None for a plain
    name."""
    if not attr.endswith(")"):
        return None
    import ast

    try:
        node = ast.parse(attr, mode="eval").body
        if not isinstance(node, ast.Call):
            raise ValueError("not a call")
        name = ast.unparse(node.func)
        args = [ast.literal_eval(a) for a in node.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg is not None}
    except (SyntaxError, ValueError) as exc:
        raise LoadError(f"{target!r}: {attr!r} is not name(literal arguments): {exc}") from None
    return name, args, kwargs


def resolve(module: ModuleType, attr: str | None, target: str) -> Any:
    """The server object ``attr`` of ``module`` names (or the one found there)."""
    if attr is not None:
        factory = _factory_call(attr, target)
        name = factory[0] if factory is not None else attr
        obj: Any = module
        for part in name.split("."):
            if not part.isidentifier():
                raise LoadError(f"{target!r}: {attr!r} is not an attribute name")
            try:
                obj = getattr(obj, part)
            except AttributeError:
                hint = _closest(part, [n for n in dir(obj) if not n.startswith("_")])
                raise LoadError(f"{target!r}: module has no attribute {name!r}{hint}") from None
        if factory is not None:
            obj = _call_factory(obj, f"{target!r}", factory[1], factory[2])
        elif callable(obj) and not is_server(obj) and not isinstance(obj, type):
            obj = _call_factory(obj, f"{target!r}")
        if not is_server(obj):
            raise LoadError(
                f"{target!r} is a {type(obj).__module__}.{type(obj).__qualname__}, not an MCP "
                "server (jetmcp.Server, mcp FastMCP/MCPServer/Server, fastmcp.FastMCP)"
            )
        return obj
    for name in SERVER_NAMES:
        obj = getattr(module, name, None)
        if obj is not None and is_server(obj):
            return obj
    found = [v for k, v in vars(module).items() if not k.startswith("_") and is_server(v)]
    unique = list({id(v): v for v in found}.values())
    if len(unique) == 1:
        return unique[0]
    if len(unique) > 1:
        names = sorted(k for k, v in vars(module).items() if not k.startswith("_") and v in found)
        raise LoadError(f"{target!r} holds several servers ({', '.join(names)}): name one")
    for name in FACTORY_NAMES:
        factory = getattr(module, name, None)
        if callable(factory):
            obj = _call_factory(factory, f"{target}:{name}()")
            if is_server(obj):
                return obj
    raise LoadError(
        f"{target!r} holds no MCP server: name it as {target}:attr "
        f"(looked for {', '.join(SERVER_NAMES)} and factories {', '.join(FACTORY_NAMES)})"
    )


def load_object(target: str) -> Any:
    """The server object ``target`` names, as the user wrote it (not adapted)."""
    source, attr = split_target(target)
    module = import_source(source)
    return resolve(module, attr, target)


def load_app(target: str, transport: str | None = None) -> Server:
    """The :class:`jetmcp.Server` serving ``target`` (SDK objects adapted for
    ``transport``, ``"stdio"`` or ``"http"``); a warning when it offers nothing."""
    from jetmcp.compat import adapt

    obj = load_object(target)
    server = adapt(obj, transport)
    if offers_nothing(obj) and claim(WARNED):  # once, not once per HTTP worker
        import logging

        logging.getLogger("jetmcp").warning(
            "%r serves no tools, resources or prompts: are they registered inside a function "
            "(such as main()) that only runs when the file is run as a program? Name that "
            "function as the target (module:main) or register them at import time",
            target,
        )
    return server


def offers_nothing(obj: Any) -> bool:
    """Whether the server ``obj`` registered no tool, resource or prompt (False when that
    cannot be told without serving it: a fastmcp server)."""
    from jetmcp.server.app import Server

    if isinstance(obj, Server):
        if type(obj) is not Server and not obj.__class__.__module__.startswith("jetmcp."):
            return False  # a subclass may answer the listings its own way
        return not (obj._tools or obj._resources or obj._templates or obj._prompts)
    tools: Any = getattr(obj, "_tool_manager", None)
    resources: Any = getattr(obj, "_resource_manager", None)
    prompts: Any = getattr(obj, "_prompt_manager", None)
    if type(obj).__module__.startswith("mcp.") and tools and resources and prompts:
        try:
            return not (
                tools.list_tools()
                or resources.list_resources()
                or resources.list_templates()
                or prompts.list_prompts()
            )
        except Exception:
            return False
    if type(obj).__module__.startswith("mcp.server.lowlevel"):
        wanted = {"tools/list", "resources/list", "resources/templates/list", "prompts/list"}
        handlers = getattr(obj, "_request_handlers", None)  # mcp 2.x: by method
        if isinstance(handlers, dict):
            return not wanted.intersection(handlers)
        handlers = getattr(obj, "request_handlers", None)  # mcp 1.x: by request class
        if isinstance(handlers, dict):
            names = {getattr(k, "__name__", "") for k in handlers}
            listed = {"ListToolsRequest", "ListResourcesRequest", "ListPromptsRequest"}
            return not listed.intersection(names) and "ListResourceTemplatesRequest" not in names
    return False


def load_or_explain(target: str, transport: str | None = None) -> Server:
    """:func:`load_app`, with any failure turned into a :class:`LoadError` of one line
    (an exception raised while importing the user's module included)."""
    from jetmcp.compat import sdk_too_old

    try:
        return load_app(target, transport)
    except Exception as exc:
        # A module or class of the SDK not found, where an SDK below the floor is installed.
        missing = isinstance(exc, ImportError) and (exc.name or "").startswith("mcp.")
        too_old = sdk_too_old() if missing or "not an MCP server" in str(exc) else None
        if too_old is not None:
            raise LoadError(f"{target!r}: {too_old}") from exc
        if isinstance(exc, LoadError):
            raise
        raise LoadError(f"{target!r} failed to load: {type(exc).__name__}: {exc}") from exc


def load_for_http(target: str) -> Server:
    """:func:`load_or_explain` for an HTTP worker, which also checks that the exported
    settings' auth can guard the server; a target that exits while it loads (``sys.exit``
    at import) is a :class:`LoadError` too."""
    try:
        server = load_or_explain(target, "http")
    except SystemExit as exc:
        raise LoadError(f"{target!r} exited while loading (status {exc.code})") from exc
    from jetmcp.auth.config import AuthSetupError, resource_server
    from jetmcp.settings import Settings

    try:
        resource_server(Settings.from_env(), server)
    except (AuthSetupError, ImportError, ValueError) as exc:
        raise LoadError(str(exc)) from None
    return server


#: What a target that raised while loading is told, to see where.
DEBUG_HINT = "--log-level debug shows the traceback"
#: Set (to anything) when ``--log-level debug`` asks for the traceback of a bad target.
DEBUG_ENV = "JETMCP_DEBUG_TARGET"


def explanation(exc: LoadError) -> str:
    """Why a target did not load: one line; with ``--log-level debug`` (:data:`DEBUG_ENV`)
    the traceback of what the user's code raised first, then that line."""
    import traceback

    cause = exc.__cause__
    if os.environ.get(DEBUG_ENV) and cause is not None:
        return "".join(traceback.format_exception(cause)) + f"jetmcp: {exc}\n"
    if cause is not None:
        return f"jetmcp: {exc} ({DEBUG_HINT})\n"
    return f"jetmcp: {exc}\n"


def explain(exc: LoadError) -> None:
    """Say on stderr why a target did not load (:func:`explanation`)."""
    sys.stderr.write(explanation(exc))
    sys.stderr.flush()


__all__ = [
    "DEBUG_ENV",
    "LoadError",
    "explain",
    "explanation",
    "load_app",
    "load_for_http",
    "load_object",
    "load_or_explain",
    "resolve",
    "split_target",
]
