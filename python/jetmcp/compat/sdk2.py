"""Servers built on the official SDK 2.x (``mcp>=2``): ``MCPServer``, the low-level
``Server``, and fastmcp 3.x/4.x (whose ``FastMCP`` runs on that low-level server).

Each request runs through the SDK's own ``ServerRunner`` kernel (its validation, middleware
chain, handler table and result shaping), on an SDK ``Connection`` kept per jetmcp session
and a per-request dispatch context whose back-channel is the jetmcp request: what the SDK
sends to the client (progress, logs, sampling, elicitation, roots) goes out on the request's
stream, and the answers come back through jetmcp's dispatcher.

``MCPServer`` tools that are synchronous and take plain parameters (no ``Context``, no
resolvers) are lifted into native tools (:class:`~jetmcp.compat.base.LiftedTool`) unless the
server has middleware of its own; their exceptions and non-primitive returns are shaped by
the SDK's own conversion (``convert_result``, then the result serialized for the revision).
"""

from __future__ import annotations

import importlib
import weakref
from collections.abc import Awaitable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from typing import Any

from jetmcp._wire import encode_notification
from jetmcp.compat.base import (
    AdaptedServer,
    LiftedTool,
    ToolTable,
    lifting_enabled,
    log,
    sdk_error,
)
from jetmcp.compat.capture import INIT_OPTIONS_ATTR
from jetmcp.core.call import NULL_SINK, Call, Outgoing, Session
from jetmcp.core.request import http_request
from jetmcp.errors import McpError
from jetmcp.protocol.meta import META_CLIENT_CAPABILITIES, META_CLIENT_INFO
from jetmcp.protocol.revisions import Revision


def _sdk(name: str) -> Any:
    return importlib.import_module(name)


def _notification(method: str, params: Mapping[str, Any] | None) -> bytes:
    # The SDK leaves ``params`` out when there are none; so does this.
    if params is None:
        return encode_notification(method)
    return encode_notification(method, dict(params))


async def _request(call: Call, method: str, params: Mapping[str, Any] | None, opts: Any) -> Any:
    """``call.request``, with the client's error raised as the SDK's ``MCPError``."""
    timeout = opts.get("timeout") if isinstance(opts, dict) else None
    body = dict(params) if params is not None else None
    try:
        if timeout is not None:
            return await call.request(method, body, timeout)
        return await call.request(method, body)
    except McpError as exc:
        mcp_error = _sdk("mcp.shared.exceptions").MCPError
        raise mcp_error(
            code=exc.code, message=exc.message, data=exc.data if exc.has_data else None
        ) from None


class _Outbound:
    """A session's standalone channel (the SDK ``Outbound`` of its ``Connection``): the
    session's GET stream, or stdout. Requests on it are answered through the dispatcher's
    table of outgoing requests, as requests of a call are."""

    def __init__(self, session: Session | None, outgoing: Outgoing | None) -> None:
        self._session = weakref.ref(session) if session is not None else None
        self._outgoing = outgoing

    def _live(self) -> Session | None:
        session = self._session() if self._session is not None else None
        if session is None or session.outbound is NULL_SINK:
            return None
        return session

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: Any = None
    ) -> dict[str, Any]:
        session = self._live()
        if session is None or self._outgoing is None:
            raise _sdk("mcp.shared.exceptions").NoBackChannelError(method)
        call = Call(method, None, session.revision, session, session.outbound, None, self._outgoing)
        answer = await _request(call, method, params, opts)
        return answer if isinstance(answer, dict) else {}

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: Any = None) -> None:
        session = self._live()
        if session is not None:
            await session.outbound.send(_notification(method, params))


class _Dispatch:
    """The SDK ``DispatchContext`` of one request, backed by its jetmcp :class:`Call`."""

    def __init__(self, call: Call, transport: Any) -> None:
        self._call = call
        self.transport = transport
        self.message_metadata: Any = None
        self._cancel: Any = None

    @property
    def can_send_request(self) -> bool:
        call = self._call
        return call.outgoing is not None and call.sink is not NULL_SINK

    @property
    def request_id(self) -> Any:
        return self._call.request_id

    @property
    def cancel_requested(self) -> Any:
        if self._cancel is None:
            import anyio

            self._cancel = anyio.Event()
        return self._cancel

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: Any = None
    ) -> dict[str, Any]:
        if not self.can_send_request:
            raise _sdk("mcp.shared.exceptions").NoBackChannelError(method)
        answer = await _request(self._call, method, params, opts)
        return answer if isinstance(answer, dict) else {}

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: Any = None) -> None:
        sink = self._call.sink
        if sink is not NULL_SINK:
            await sink.send(_notification(method, params))

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        token = self._call.progress_token
        if token is None:
            return
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self._call.notify("notifications/progress", params)


class SdkServer(AdaptedServer):
    """A server of the official SDK 2.x (or one built on it), served by jetmcp."""

    framework = "mcp 2.x"

    def __init__(self, sdk: Any, low: Any) -> None:
        super().__init__(sdk, low, name=low.name, version=low.version or "")
        self.title = low.title
        self.website_url = low.website_url
        self._connections: weakref.WeakKeyDictionary[Session, Any] = weakref.WeakKeyDictionary()
        self._runner_cls = _sdk("mcp.server.runner").ServerRunner
        self._connection_cls = _sdk("mcp.server.connection").Connection
        self._init_params = _sdk("mcp_types").InitializeRequestParams
        transport = _sdk("mcp.shared.transport_context").TransportContext
        self._transport_legacy = transport(kind="jetmcp", can_send_request=True)
        self._transport_plain = transport(kind="jetmcp", can_send_request=False)
        self._metadata_cls = _sdk("mcp.shared.message").ServerMessageMetadata
        methods = [m for m in low._request_handlers if m not in ("ping", "server/discover")]
        self.sdk_handlers(methods)
        self._tools = ToolTable(self._input_schema)

    def _input_schema(self, name: str) -> Any:
        schema_of = getattr(self.low, "get_tool_input_schema", None)
        return schema_of(name) if callable(schema_of) else None

    # -- the handshake ------------------------------------------------------------------------

    def initialize_result(self, revision: Revision) -> dict[str, Any]:
        version = revision.version
        if not revision.serves("initialize"):  # no handshake: the SDK's stateless runner
            caps = self.low.get_capabilities(protocol_version=version)
            return {
                "capabilities": caps.model_dump(by_alias=True, mode="json", exclude_none=True),
                "serverInfo": self.low.server_info_stamp,
            }
        connection = self._connection_cls(_Outbound(None, None), protocol_version=version)
        # The options its program passed to run(), where jetmcp captured it running.
        options = getattr(self.low, INIT_OPTIONS_ATTR, None)
        runner = self._runner_cls(self.low, connection, None, init_options=options)
        params = {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "jetmcp", "version": "0"},
        }
        result: dict[str, Any] = runner._serialize(
            "initialize", version, runner._handle_initialize(params)
        )
        return result

    # -- requests -----------------------------------------------------------------------------

    def _connection(self, call: Call) -> Any:
        revision = call.revision
        if revision.per_request_capabilities:
            meta = call.meta or {}
            return self._connection_cls.from_envelope(
                revision.version, meta.get(META_CLIENT_INFO), meta.get(META_CLIENT_CAPABILITIES)
            )
        session = call.session
        if session is not None:
            found = self._connections.get(session)
            if found is not None:
                if session.initialized and not found.initialized.is_set():
                    found.initialized.set()
                return found
        client_params = None
        if session is not None:
            try:
                client_params = self._init_params.model_validate(
                    {
                        "protocolVersion": revision.version,
                        "capabilities": session.client_capabilities,
                        "clientInfo": session.client_info or {"name": "", "version": ""},
                    }
                )
            except Exception:
                client_params = None
        connection = self._connection_cls(
            _Outbound(session, call.outgoing),
            protocol_version=revision.version,
            session_id=session.id if session is not None else None,
            client_params=client_params,
        )
        if session is None or session.initialized:
            # Session-less requests are served as the SDK serves stateless HTTP: no handshake.
            connection.initialized.set()
        if session is not None:
            self._connections[session] = connection
        return connection

    def via_sdk(self, params: dict[str, Any], call: Call) -> Awaitable[dict[str, Any]]:
        return self._run(params, call)

    async def _run(self, params: dict[str, Any], call: Call) -> dict[str, Any]:
        connection = self._connection(call)
        runner = self._runner_cls(self.low, connection, self.lifespan_context)
        legacy = not call.revision.mrtr and call.outgoing is not None
        transport = self._transport_legacy if legacy else self._transport_plain
        dispatch = _Dispatch(call, transport)
        request = http_request(call.http_headers)
        if request is not None:
            # The HTTP request, where the SDK's transports put it (``ctx.headers``,
            # ``ctx.request_context.request``, fastmcp's ``get_http_request()``).
            dispatch.transport = replace(transport, headers=request.headers)
            dispatch.message_metadata = self._metadata_cls(request_context=request)
        try:
            result: dict[str, Any] = await runner._on_request(dispatch, call.method, params)
        except Exception as exc:
            raise self._error(exc, call.revision) from None
        return result

    def _error(self, exc: Exception, revision: Revision) -> McpError:
        """The JSON-RPC error the SDK sends for ``exc`` (the catch-all is the SDK's too:
        code 0 and the text on the handshake eras, a masked -32603 on 2026-07-28)."""
        if not revision.serves("initialize"):
            data = _sdk("mcp.server.runner").modern_error_data(exc)
        else:
            data = _sdk("mcp.shared.jsonrpc_dispatcher").handler_exception_to_error_data(exc)
            if data is None:
                log.exception("handler for a request raised")
                return McpError(0, str(exc))
        return sdk_error(data.code, data.message, data.data)

    # -- lifespan -----------------------------------------------------------------------------

    def enter_lifespan(self) -> AbstractAsyncContextManager[Any]:
        result: AbstractAsyncContextManager[Any] = self.low.lifespan(self.low)
        return result


class McpServerAdapter(SdkServer):
    """``mcp.server.mcpserver.MCPServer``: its synchronous plain-parameter tools are lifted."""

    framework = "mcp 2.x MCPServer"

    def __init__(self, sdk: Any) -> None:
        super().__init__(sdk, sdk._lowlevel_server)
        if lifting_enabled() and not _own_middleware(self.low):
            for tool in sdk._tool_manager.list_tools():
                self._lift(tool)

    def _lift(self, tool: Any) -> None:
        if tool.context_kwarg is not None or tool.resolved_params or tool.is_async:
            return
        fn = tool.fn
        meta = tool.fn_metadata
        has_output = tool.output_schema is not None
        name = tool.name
        tool_types = _sdk("mcp_types")

        def convert(value: Any, revision: Revision) -> dict[str, Any]:
            try:
                result = meta.convert_result(value)
            except Exception as exc:
                # The SDK's Tool.run: a return value that fails output conversion is a crash.
                return explain(exc, revision)
            return self._dump_tool_result(result, revision)

        def explain(exc: Exception, revision: Revision) -> dict[str, Any]:
            exceptions = _sdk("mcp.server.mcpserver.exceptions")
            mcp_error = _sdk("mcp.shared.exceptions").MCPError
            if isinstance(exc, mcp_error):
                raise sdk_error(exc.error.code, exc.error.message, exc.error.data)
            if isinstance(exc, exceptions.ToolError | exceptions.ResourceError) and not isinstance(
                exc, exceptions.UnexpectedToolError | exceptions.UnexpectedResourceError
            ):
                text = f"Error executing tool {name}: {exc}"
            else:
                log.error("Tool %r raised an unexpected exception", name, exc_info=exc)
                text = f"Error executing tool {name}"
            result = tool_types.CallToolResult(
                content=[tool_types.TextContent(type="text", text=text)], is_error=True
            )
            return self._dump_tool_result(result, revision)

        try:
            lifted = LiftedTool(
                fn,
                self,
                convert,
                explain,
                name=name,
                description=tool.description,
                input_schema=tool.parameters,
                structured_output=has_output,
            )
        except Exception:
            log.debug("tool %r stays on the SDK path", name, exc_info=True)
            return
        self.lift(lifted)

    def _dump_tool_result(self, result: Any, revision: Revision) -> dict[str, Any]:
        methods = _sdk("mcp_types.methods")
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        out: dict[str, Any] = methods.serialize_server_result(
            "tools/call", revision.version, dumped
        )
        return out


def _own_middleware(low: Any) -> list[Any]:
    """The middleware of ``low``'s chain besides the SDK's built-ins (OpenTelemetry, the
    request-state boundary). A lifted call skips the chain, so a server with any (its
    ``middleware=``, or appended to ``server.middleware`` before it is served) keeps every
    tool on the SDK's path: the middleware then sees every ``tools/call``."""
    builtin: tuple[type, ...] = (
        _sdk("mcp.server._otel").OpenTelemetryMiddleware,
        _sdk("mcp.server.request_state").RequestStateBoundary,
    )
    return [m for m in getattr(low, "middleware", ()) if not isinstance(m, builtin)]


def adapt_v2(obj: Any) -> AdaptedServer:
    """The adapter for ``obj``: an ``MCPServer``, a low-level ``Server``, or a framework
    object holding one in ``_mcp_server`` (fastmcp)."""
    mcpserver = _sdk("mcp.server.mcpserver")
    if isinstance(obj, mcpserver.MCPServer):
        return McpServerAdapter(obj)
    low = obj if hasattr(obj, "_request_handlers") else obj._mcp_server
    return SdkServer(obj, low)


__all__ = ["McpServerAdapter", "SdkServer", "adapt_v2"]
