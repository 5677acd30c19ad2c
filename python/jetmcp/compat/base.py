"""What the adapters of every framework share: a :class:`jetmcp.Server` whose methods run
through the adapted server's own handlers, except ``tools/call`` of the tools lifted into
native jetmcp tools (see :class:`LiftedTool`), which keep jetmcp's fast path.

The adapted server is asked once per revision what ``initialize`` says (capabilities,
``serverInfo``, instructions), so the handshake is the SDK's own. Its lifespan is entered
by the transports as a native lifespan is (:meth:`Server.enter_lifespan`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Unpack

from jetmcp.compat.capture import INIT_OPTIONS_ATTR
from jetmcp.core.call import Call, Result
from jetmcp.errors import McpError
from jetmcp.protocol.revisions import Revision
from jetmcp.server.app import Server
from jetmcp.server.options import ToolKeywords
from jetmcp.server.tools import Tool

log = logging.getLogger("jetmcp.compat")

#: ``JETMCP_COMPAT_NATIVE=0`` runs every tool through the SDK's own objects (no lifting).
NATIVE_ENV = "JETMCP_COMPAT_NATIVE"


def lifting_enabled() -> bool:
    return os.environ.get(NATIVE_ENV, "1") not in ("0", "false", "no")


class AdaptedServer(Server):
    """A server of another framework, served by jetmcp.

    Subclasses set :attr:`handlers` to :meth:`via_sdk` for every method the adapted server
    answers, implement :meth:`via_sdk` and :meth:`initialize_result`, and lift what tools they
    can with :meth:`lift`."""

    #: The framework's name, for logs and errors.
    framework = "sdk"
    #: ``logging/setLevel`` goes to the adapted server, which answers -32601 when it has no
    #: handler for it (as its SDK does), not to jetmcp's built-in one; its instructions are
    #: said at every revision, as its SDK says them.
    adapted = True

    def __init__(self, sdk: Any, low: Any, *, name: str, version: str) -> None:
        super().__init__(name, version)
        #: The object the user wrote, and the low-level server behind it.
        self.sdk = sdk
        self.low = low
        self._initialize: dict[str, dict[str, Any]] = {}

    # -- the handshake: the SDK's own --------------------------------------------------------

    def initialize_result(self, revision: Revision) -> dict[str, Any]:
        """The SDK's ``initialize`` result at ``revision`` (wire form)."""
        raise NotImplementedError

    def _handshake(self, revision: Revision) -> dict[str, Any]:
        found = self._initialize.get(revision.version)
        if found is None:
            found = self.initialize_result(revision)
            self._initialize[revision.version] = found
        return found

    def capabilities(self, revision: Revision) -> dict[str, Any]:
        caps = self._handshake(revision).get("capabilities")
        return dict(caps) if isinstance(caps, dict) else {}

    def server_info(self, revision: Revision) -> dict[str, Any]:
        info = self._handshake(revision).get("serverInfo")
        return dict(info) if isinstance(info, dict) else {"name": self.name}

    @property
    def instructions(self) -> str | None:
        # The options a program passed to a low-level ``run(read, write, options)`` win, as
        # they do on the SDK (jetmcp captured them where it started serving).
        options = getattr(self.low, INIT_OPTIONS_ATTR, None)
        value = getattr(options, "instructions", None)
        if value is None:
            value = getattr(self.low, "instructions", None)
        return value if isinstance(value, str) else None

    @instructions.setter
    def instructions(self, value: str | None) -> None:
        # Server.__init__ assigns it; the adapted server stays the one source.
        pass

    # -- methods ------------------------------------------------------------------------------

    def via_sdk(self, params: dict[str, Any], call: Call) -> Awaitable[dict[str, Any]]:
        """Answer ``call.method`` with the adapted server's own handler."""
        raise NotImplementedError

    def sdk_handlers(self, methods: list[str]) -> None:
        """Serve ``methods`` (and only them, besides what the dispatcher answers itself)
        through :meth:`via_sdk`; ``tools/call`` keeps the built-in handler, which sends
        every tool that is not lifted to :meth:`via_sdk` too."""
        handlers: dict[str, Callable[[dict[str, Any], Call], Result]] = {}
        for method in methods:
            handlers[method] = self.via_sdk
        if "tools/call" in handlers:
            handlers["tools/call"] = self.builtin_call_tool
        self.handlers = SdkHandlers(handlers, self.via_sdk)

    def _handle_call_tool(self, params: dict[str, Any], call: Call) -> Result:
        name = params.get("name")
        if type(name) is str and name in self._tools:
            return super()._handle_call_tool(params, call)
        return self.via_sdk(params, call)

    def lift(self, tool: LiftedTool) -> None:
        """Serve ``tool`` natively (only if the extension can call it by itself)."""
        if tool.route is None:
            return
        self._tools[tool.name] = tool
        self.routes[tool.name] = tool.route

    # -- lifespan -----------------------------------------------------------------------------

    def enter_lifespan(self) -> AbstractAsyncContextManager[Any]:
        raise NotImplementedError


class _SchemaOnly:
    """A tool the SDK serves itself, as far as jetmcp looks at it before the SDK does: its
    name, its input schema, and no scopes of jetmcp's own (an ``authorize`` hook still sees
    it by name)."""

    __slots__ = ("input_schema", "name", "scopes")

    def __init__(self, name: str, input_schema: dict[str, Any]) -> None:
        self.name = name
        self.input_schema = input_schema
        self.scopes: frozenset[str] = frozenset()


class ToolTable(dict[str, Tool]):
    """The lifted tools, by name. ``get`` of a tool the SDK serves itself gives an object
    holding only its input schema, the SDK's own (``get_tool_input_schema``), so the
    dispatcher checks the 2026-07-28 ``Mcp-Param-*`` headers of every tool, lifted or not."""

    __slots__ = ("schema_of",)

    def __init__(self, schema_of: Callable[[str], Any]) -> None:
        super().__init__()
        self.schema_of = schema_of

    def get(self, key: str, default: Any = None) -> Any:
        found = super().get(key)
        if found is not None or type(key) is not str:
            return found if found is not None else default
        try:
            schema = self.schema_of(key)
        except Exception:  # the SDK then serves the call unvalidated; so does jetmcp
            log.debug("no input schema for tool %r", key, exc_info=True)
            return default
        return _SchemaOnly(key, schema) if isinstance(schema, dict) else default


class SdkHandlers(dict[str, Any]):
    """The adapted server's method table: a method it does not list still goes to the SDK,
    which answers it as it would (its own "method not found", or a custom handler added
    after adaptation)."""

    __slots__ = ("fallback",)

    def __init__(self, handlers: dict[str, Any], fallback: Any) -> None:
        super().__init__(handlers)
        self.fallback = fallback

    def get(self, key: str, default: Any = None) -> Any:
        found = super().get(key)
        return found if found is not None else self.fallback


class LiftedTool(Tool):
    """A tool of the adapted server that jetmcp calls itself when its arguments are exactly
    what its plain parameters take (the extension's fast path). Anything else (arguments to
    be coerced or refused) goes to the SDK, so the answer is always the SDK's; return
    values and exceptions are shaped as the SDK shapes them."""

    __slots__ = ("adapter", "convert", "explain")

    def __init__(
        self,
        fn: Callable[..., Any],
        adapter: AdaptedServer,
        convert: Callable[[Any, Revision], dict[str, Any]],
        explain: Callable[[Exception, Revision], dict[str, Any]],
        **options: Unpack[ToolKeywords],
    ) -> None:
        super().__init__(fn, **options)
        self.adapter = adapter
        #: The SDK's shaping of a return value, and of an exception, as result dicts.
        self.convert = convert
        self.explain = explain

    def call(self, arguments: dict[str, Any], call: Call, server: Server) -> Result:
        params: dict[str, Any] = {"name": self.name, "arguments": arguments}
        if call.meta is not None:
            params["_meta"] = call.meta
        return self.adapter.via_sdk(params, call)

    def failure(self, exc: Exception, revision: Revision) -> dict[str, Any]:
        return self.explain(exc, revision)

    def shape(self, value: Any, revision: Revision) -> dict[str, Any]:
        return self.convert(value, revision)


def sdk_error(code: int, message: str, data: Any) -> McpError:
    return McpError(code, message) if data is None else McpError(code, message, data)


__all__ = ["AdaptedServer", "LiftedTool", "lifting_enabled", "sdk_error"]
