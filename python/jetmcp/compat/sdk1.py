"""Servers built on the official SDK 1.x (``mcp<2``): ``mcp.server.fastmcp.FastMCP``, the
low-level ``Server`` with its decorators, and fastmcp 2.x (whose ``FastMCP`` runs on it).

A request is validated as the SDK's session validates it (against the ``ClientRequest``
member its method names: :func:`request_models`), then handed to the low-level server's own
handler table with the SDK's ``request_ctx`` set, exactly as
its ``Server._handle_request`` does. The ``session`` handlers see is a real SDK
``ServerSession`` whose two primitives (``send_request``, ``send_notification``) go through
the jetmcp request, so ``ctx.session.create_message``/``elicit``/``list_roots``/
``send_log_message``/``send_progress_notification``... reach the client.

``FastMCP`` tools that are synchronous and take no ``Context`` are lifted into native tools:
when a call's arguments are exactly what their plain parameters take, the extension calls the
function, and its return value is converted, split into content and structured content and
checked against the output schema as the SDK's ``Tool.run`` and low-level handler do (its
exceptions shaped as they shape them). Any other call goes to the SDK.
"""

from __future__ import annotations

import importlib
import inspect
import json
import typing
from collections.abc import AsyncIterator, Awaitable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any

from jetmcp._wire import encode_notification
from jetmcp.compat import schemas
from jetmcp.compat.base import (
    AdaptedServer,
    LiftedTool,
    lifting_enabled,
    log,
    sdk_error,
)
from jetmcp.compat.capture import INIT_OPTIONS_ATTR
from jetmcp.core.call import NULL_SINK, Call
from jetmcp.core.request import http_request
from jetmcp.errors import INVALID_PARAMS, McpError
from jetmcp.protocol.revisions import Revision


def _sdk(name: str) -> Any:
    return importlib.import_module(name)


def _session_class() -> type:
    """A ``ServerSession`` bound to one jetmcp request instead of a pair of streams."""
    server_session = _sdk("mcp.server.session")
    types = _sdk("mcp.types")
    exceptions = _sdk("mcp.shared.exceptions")

    base: Any = server_session.ServerSession

    class CallSession(base):  # type: ignore[misc]
        def __init__(self, call: Call, client_params: Any, init_options: Any) -> None:
            # The streams and tasks of BaseSession are not wanted: both primitives below
            # are replaced, and the state the helpers read is set here.
            self._call = call
            self._client_params = client_params
            self._init_options = init_options
            self._initialization_state = server_session.InitializationState.Initialized
            self._experimental_features = None

        async def send_request(
            self,
            request: Any,
            result_type: Any,
            request_read_timeout_seconds: Any = None,
            metadata: Any = None,
            progress_callback: Any = None,
        ) -> Any:
            message = request.model_dump(by_alias=True, mode="json", exclude_none=True)
            timeout = (
                request_read_timeout_seconds.total_seconds()
                if request_read_timeout_seconds is not None
                else None
            )
            try:
                if timeout is None:
                    answer = await self._call.request(message["method"], message.get("params"))
                else:
                    answer = await self._call.request(
                        message["method"], message.get("params"), timeout
                    )
            except McpError as exc:
                raise exceptions.McpError(
                    types.ErrorData(
                        code=exc.code,
                        message=exc.message,
                        data=exc.data if exc.has_data else None,
                    )
                ) from None
            return result_type.model_validate(answer if isinstance(answer, dict) else {})

        async def send_notification(
            self, notification: Any, related_request_id: Any = None
        ) -> None:
            message = notification.model_dump(by_alias=True, mode="json", exclude_none=True)
            params = message.get("params")
            # The SDK leaves ``params`` out when there are none; so does this.
            encoded = (
                encode_notification(message["method"])
                if params is None
                else encode_notification(message["method"], params)
            )
            call = self._call
            if call.sink is not NULL_SINK and related_request_id is not None:
                await call.sink.send(encoded)
                return
            session = call.session
            if session is not None and session.outbound is not NULL_SINK:
                await session.outbound.send(encoded)
            elif call.sink is not NULL_SINK:
                await call.sink.send(encoded)

    return CallSession


class SdkServer1(AdaptedServer):
    """A server of the official SDK 1.x (or one built on it), served by jetmcp."""

    framework = "mcp 1.x"

    def __init__(self, sdk: Any, low: Any, init_options: Any = None) -> None:
        super().__init__(sdk, low, name=low.name, version=low.version or "")
        self.website_url = getattr(low, "website_url", None)
        self._types = _sdk("mcp.types")
        self._lowlevel = _sdk("mcp.server.lowlevel.server")
        # Its tools/call handler validates with jsonschema: the same checks, each schema's
        # validator kept (compat/schemas.py).
        schemas.install(self._lowlevel)
        self._context_cls = _sdk("mcp.shared.context").RequestContext
        # What this SDK's RequestContext takes: mcp 1.23 added ``experimental`` (and the
        # module defining it), older releases lack ``request`` too.
        self._context_fields = _fields_of(self._context_cls)
        self._experimental_cls = _optional_attr(
            "mcp.server.experimental.request_context", "Experimental"
        )
        self._session_cls = _session_class()
        self._init_options = init_options or low.create_initialization_options()
        self._request_models = request_models(self._types.ClientRequest)
        # Every request method of the SDK's, but those jetmcp's dispatcher answers itself.
        self.sdk_handlers([m for m in self._request_models if m not in ("initialize", "ping")])

    # -- the handshake ------------------------------------------------------------------------

    def initialize_result(self, revision: Revision) -> dict[str, Any]:
        types, opts = self._types, self._init_options
        result = types.InitializeResult(
            protocolVersion=revision.version,
            capabilities=opts.capabilities,
            serverInfo=types.Implementation(
                name=opts.server_name,
                version=opts.server_version,
                # Both fields came with mcp 1.16; an older SDK's handshake has neither.
                **{
                    key: getattr(opts, attr)
                    for key, attr in (("websiteUrl", "website_url"), ("icons", "icons"))
                    if getattr(opts, attr, None) is not None
                },
            ),
            instructions=getattr(opts, "instructions", None),  # mcp 1.3 on
        )
        dumped: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return dumped

    # -- requests -----------------------------------------------------------------------------

    def via_sdk(self, params: dict[str, Any], call: Call) -> Awaitable[dict[str, Any]]:
        return self._run(params, call)

    def _client_params(self, call: Call) -> Any:
        session = call.session
        if session is None:
            return None
        try:
            return self._types.InitializeRequestParams.model_validate(
                {
                    "protocolVersion": call.revision.version,
                    "capabilities": session.client_capabilities,
                    "clientInfo": session.client_info or {"name": "", "version": ""},
                }
            )
        except Exception:
            return None

    async def _run(self, params: dict[str, Any], call: Call) -> dict[str, Any]:
        types = self._types
        message: dict[str, Any] = {"method": call.method}
        if params:
            message["params"] = params
        try:
            model = self._request_models.get(call.method)
            if model is not None:
                request = model.model_validate(message)
            else:
                request = types.ClientRequest.model_validate(message).root
        except Exception:
            # What the SDK's session answers for a request its models refuse.
            raise McpError(INVALID_PARAMS, "Invalid request parameters", "") from None
        handler = self.low.request_handlers.get(type(request))
        if handler is None:
            raise McpError(types.METHOD_NOT_FOUND, "Method not found")
        session = self._session_cls(call, self._client_params(call), self._init_options)
        request_params = getattr(request, "params", None)
        client_params = session._client_params
        fields: dict[str, Any] = {
            "request_id": call.request_id,
            "meta": getattr(request_params, "meta", None) if request_params is not None else None,
            "session": session,
        }
        if "lifespan_context" in self._context_fields:
            fields["lifespan_context"] = self.lifespan_context
        if self._experimental_cls is not None and "experimental" in self._context_fields:
            fields["experimental"] = self._experimental_cls(
                task_metadata=getattr(request_params, "task", None),
                _client_capabilities=client_params.capabilities if client_params else None,
                _session=session,
                _task_support=None,
            )
        if "request" in self._context_fields:
            # The HTTP request's headers (``request.headers``), None on stdio, as the SDK's.
            fields["request"] = http_request(call.http_headers)
        context = self._context_cls(**fields)
        token = self._lowlevel.request_ctx.set(context)
        try:
            response = await handler(request)
        except _sdk("mcp.shared.exceptions").McpError as exc:
            raise sdk_error(exc.error.code, exc.error.message, exc.error.data) from None
        except Exception as exc:
            log.exception("handler for %s raised", call.method)
            raise McpError(0, str(exc)) from None
        finally:
            self._lowlevel.request_ctx.reset(token)
        if isinstance(response, types.ErrorData):
            raise sdk_error(response.code, response.message, response.data)
        dumped: dict[str, Any] = response.model_dump(by_alias=True, mode="json", exclude_none=True)
        return dumped

    # -- lifespan -----------------------------------------------------------------------------

    def enter_lifespan(self) -> AbstractAsyncContextManager[Any]:
        return self._lifespan()

    @asynccontextmanager
    async def _lifespan(self) -> AsyncIterator[Any]:
        # fastmcp 2.x runs its own lifespan around the low-level one, which only reads
        # the result back.
        outer = getattr(self.sdk, "_lifespan_manager", None)
        async with AsyncExitStack() as stack:
            if outer is not None:
                await stack.enter_async_context(outer())
            lifespan = getattr(self.low, "lifespan", None)  # mcp 1.3 on
            yield None if lifespan is None else await stack.enter_async_context(lifespan(self.low))


class FastMcp1Adapter(SdkServer1):
    """``mcp.server.fastmcp.FastMCP``: its plain tools are lifted."""

    framework = "mcp 1.x FastMCP"

    def __init__(self, sdk: Any) -> None:
        super().__init__(sdk, sdk._mcp_server)
        if lifting_enabled():
            for tool in sdk._tool_manager.list_tools():
                self._lift(tool)

    def _lift(self, tool: Any) -> None:
        if tool.context_kwarg is not None or tool.is_async:
            return
        meta = tool.fn_metadata
        if not hasattr(meta, "convert_result"):
            return  # an SDK before structured output (mcp < 1.10): the SDK runs every call
        output_schema = getattr(tool, "output_schema", None)
        name = tool.name
        types = self._types
        # The low-level server's jsonschema (compat/schemas.py), for the output check.
        jsonschema = self._lowlevel.jsonschema

        def error_result(text: str) -> dict[str, Any]:
            result = types.CallToolResult(
                content=[types.TextContent(type="text", text=text)], isError=True
            )
            dumped: dict[str, Any] = result.model_dump(
                by_alias=True, mode="json", exclude_none=True
            )
            return dumped

        def explain(exc: Exception, revision: Revision) -> dict[str, Any]:
            url_required = _sdk("mcp.shared.exceptions").UrlElicitationRequiredError
            if isinstance(exc, url_required):
                raise sdk_error(exc.error.code, exc.error.message, exc.error.data)
            return error_result(f"Error executing tool {name}: {exc}")

        def convert(value: Any, revision: Revision) -> dict[str, Any]:
            # FastMCP's Tool.run converts the value; the low-level tools/call handler then
            # splits it into content and structured content and checks the latter against
            # the output schema. Both steps as the SDK takes them, in its words.
            try:
                converted = meta.convert_result(value)
            except Exception as exc:
                return explain(exc, revision)
            if isinstance(converted, types.CallToolResult):
                result = converted
            else:
                try:
                    structured: Any = None
                    if isinstance(converted, tuple) and len(converted) == 2:
                        content, structured = converted
                    elif isinstance(converted, dict):
                        structured = converted
                        content = [
                            types.TextContent(type="text", text=json.dumps(converted, indent=2))
                        ]
                    elif hasattr(converted, "__iter__"):
                        content = converted
                    else:
                        kind = type(converted).__name__
                        return error_result(f"Unexpected return type from tool: {kind}")
                    if output_schema is not None:
                        if structured is None:
                            return error_result(
                                "Output validation error: outputSchema defined but no "
                                "structured output returned"
                            )
                        try:
                            jsonschema.validate(instance=structured, schema=output_schema)
                        except jsonschema.ValidationError as exc:
                            return error_result(f"Output validation error: {exc.message}")
                    result = types.CallToolResult(
                        content=list(content), structuredContent=structured, isError=False
                    )
                except Exception as exc:
                    return error_result(str(exc))
            dumped: dict[str, Any] = result.model_dump(
                by_alias=True, mode="json", exclude_none=True
            )
            return dumped

        try:
            lifted = LiftedTool(
                tool.fn,
                self,
                convert,
                explain,
                name=name,
                description=tool.description,
                input_schema=tool.parameters,
                structured_output=output_schema is not None,
            )
        except Exception:
            log.debug("tool %r stays on the SDK path", name, exc_info=True)
            return
        self.lift(lifted)


def _optional_attr(module: str, name: str) -> Any:
    """``module.name``, or None when this SDK release has no such module or name."""
    try:
        return getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None


def _fields_of(cls: Any) -> frozenset[str]:
    """The field names of a dataclass (RequestContext), as this SDK release defines it."""
    import dataclasses

    if dataclasses.is_dataclass(cls):
        return frozenset(f.name for f in dataclasses.fields(cls))
    return frozenset(inspect.signature(cls).parameters)


def request_models(union_root: Any) -> dict[str, Any]:
    """The member models of the SDK's ``ClientRequest`` union, by the method each names.

    The session validates a request against the whole union (about 36 µs, most of it
    trying the members whose ``method`` literal does not match); only one member can
    accept a given method, so validating against it alone gives the same object, or
    fails where the union fails (``tests/compat/dropin/test_request_models.py`` holds the two
    equal)."""
    models: dict[str, Any] = {}
    root = union_root.model_fields["root"].annotation
    for member in typing.get_args(root):
        field = getattr(member, "model_fields", {}).get("method")
        if field is None:
            continue
        for method in typing.get_args(field.annotation):
            if isinstance(method, str) and method not in models:
                models[method] = member
    return models


def adapt_v1(obj: Any, transport: str | None = None) -> AdaptedServer:
    """The adapter for ``obj``: a 1.x ``FastMCP``, a low-level ``Server``, or a framework
    object holding one in ``_mcp_server`` (fastmcp 2.x, whose stdio handshake announces
    tool list changes only)."""
    fastmcp = _sdk("mcp.server.fastmcp")
    if isinstance(obj, fastmcp.FastMCP):
        return FastMcp1Adapter(obj)
    if hasattr(obj, "request_handlers"):
        # The options its program passed to run(), where jetmcp captured it running.
        return SdkServer1(obj, obj, getattr(obj, INIT_OPTIONS_ATTR, None))
    low = obj._mcp_server
    options = None
    if transport == "stdio":
        notifications = _sdk("mcp.server.lowlevel.server").NotificationOptions
        options = low.create_initialization_options(
            notification_options=notifications(tools_changed=True)
        )
    return SdkServer1(obj, low, options)


__all__ = ["FastMcp1Adapter", "SdkServer1", "adapt_v1"]
