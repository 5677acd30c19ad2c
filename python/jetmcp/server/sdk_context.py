"""The official SDK's view of a request, for tools written against it: ``ctx.session`` (the
SDK's ``ServerSession`` methods) and ``ctx.request_context`` (its ``RequestContext``).

Results come back as the SDK's own models when the SDK is installed (``mcp_types`` of 2.x,
``mcp.types`` of 1.x), so ``result.content.text`` reads as it does there; as plain dicts
otherwise. Requests and notifications the tool builds with SDK models are sent as they
dump (by alias, without unset fields).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from jetmcp.core.request import HttpRequest, http_request

if TYPE_CHECKING:
    from jetmcp.server.context import Context


def sdk_types() -> Any:
    """The SDK's types module, or None when no SDK is installed."""
    for name in ("mcp_types", "mcp.types"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


def _dump(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if dump is not None:
        return dump(by_alias=True, mode="json", exclude_none=True)
    if isinstance(value, list | tuple):
        return [_dump(v) for v in value]
    return value


def _typed(name: str, value: Any) -> Any:
    types = sdk_types()
    model = getattr(types, name, None) if types is not None else None
    if model is None:
        return value
    try:
        return model.model_validate(value)
    except Exception:
        return value


class Meta:
    """``request_context.meta``: the request's ``_meta``, by attribute (``progressToken``,
    ``progress_token``) or by key."""

    __slots__ = ("_meta",)

    def __init__(self, meta: dict[str, Any]) -> None:
        self._meta = meta

    def __getattr__(self, name: str) -> Any:
        meta = self._meta
        if name in meta:
            return meta[name]
        camel = "".join(p if i == 0 else p.title() for i, p in enumerate(name.split("_")))
        return meta.get(camel)

    def __getitem__(self, key: str) -> Any:
        return self._meta[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._meta.get(key, default)

    def model_dump(self, **_: Any) -> dict[str, Any]:
        return dict(self._meta)


class SessionView:
    """``ctx.session``: the SDK ``ServerSession`` methods, over the jetmcp request."""

    __slots__ = ("_ctx",)

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    @property
    def client_params(self) -> Any:
        return _typed("InitializeRequestParams", self._ctx.client_params)

    def check_client_capability(self, capability: Any) -> bool:
        """Whether the client declared everything ``capability`` names."""
        wanted = _dump(capability)
        have = self._ctx.client_capabilities
        return isinstance(wanted, dict) and _covers(have, wanted)

    async def send_request(self, request: Any, result_type: Any = None, *_: Any, **__: Any) -> Any:
        message = _dump(request)
        message = message.get("root", message) if isinstance(message, dict) else message
        answer = await self._ctx._ask(message["method"], dict(message.get("params") or {}), None)
        if result_type is not None and hasattr(result_type, "model_validate"):
            return result_type.model_validate(answer if isinstance(answer, dict) else {})
        return answer

    async def send_notification(self, notification: Any, related_request_id: Any = None) -> None:
        message = _dump(notification)
        message = message.get("root", message) if isinstance(message, dict) else message
        await self._ctx._session_notify(message["method"], message.get("params"))

    async def send_log_message(
        self, level: str, data: Any, logger: str | None = None, related_request_id: Any = None
    ) -> None:
        await self._ctx.log(level, data, logger_name=logger)

    async def send_progress_notification(
        self,
        progress_token: Any,
        progress: float,
        total: float | None = None,
        message: str | None = None,
        related_request_id: Any = None,
    ) -> None:
        params: dict[str, Any] = {"progressToken": progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None and self._ctx.revision.progress_message:
            params["message"] = message
        await self._ctx.call.notify("notifications/progress", params)

    async def send_resource_updated(self, uri: Any) -> None:
        await self._ctx.server.notify_resource_updated(str(uri))

    async def send_resource_list_changed(self) -> None:
        await self._ctx.send_resource_list_changed()

    async def send_tool_list_changed(self) -> None:
        await self._ctx.send_tool_list_changed()

    async def send_prompt_list_changed(self) -> None:
        await self._ctx.send_prompt_list_changed()

    async def send_ping(self) -> Any:
        return _typed("EmptyResult", await self._ctx._ask("ping", {}, None))

    async def list_roots(self) -> Any:
        return _typed("ListRootsResult", await self._ctx._ask("roots/list", {}, None))

    async def create_message(
        self,
        messages: list[Any],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
        include_context: Any = None,
        temperature: float | None = None,
        stop_sequences: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        model_preferences: Any = None,
        tools: list[Any] | None = None,
        tool_choice: Any = None,
        related_request_id: Any = None,
    ) -> Any:
        params: dict[str, Any] = {"messages": _dump(messages), "maxTokens": max_tokens}
        optional = {
            "systemPrompt": system_prompt,
            "includeContext": include_context,
            "temperature": temperature,
            "stopSequences": stop_sequences,
            "metadata": metadata,
            "modelPreferences": _dump(model_preferences),
            "tools": _dump(tools),
            "toolChoice": _dump(tool_choice),
        }
        params.update({k: v for k, v in optional.items() if v is not None})
        answer = await self._ctx._ask("sampling/createMessage", params, None)
        return _typed("CreateMessageResult", answer)

    async def elicit(
        self, message: str, requested_schema: Any, related_request_id: Any = None
    ) -> Any:
        return await self.elicit_form(message, requested_schema)

    async def elicit_form(
        self, message: str, requested_schema: Any, related_request_id: Any = None
    ) -> Any:
        params: dict[str, Any] = {}
        if self._ctx.revision.url_elicitation:
            params["mode"] = "form"
        params["message"] = message
        params["requestedSchema"] = _dump(requested_schema)
        return _typed("ElicitResult", await self._ctx._ask("elicitation/create", params, None))

    async def elicit_url(
        self, message: str, url: str, elicitation_id: str, related_request_id: Any = None
    ) -> Any:
        params = {"mode": "url", "message": message, "url": url, "elicitationId": elicitation_id}
        return _typed("ElicitResult", await self._ctx._ask("elicitation/create", params, None))

    async def send_elicit_complete(
        self, elicitation_id: str, related_request_id: Any = None
    ) -> None:
        await self._ctx.send_elicitation_complete(elicitation_id)


class RequestContextView:
    """``ctx.request_context``: the SDK's ``RequestContext`` fields for this request."""

    __slots__ = ("_ctx",)

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    @property
    def request_id(self) -> Any:
        return self._ctx.call.request_id

    @property
    def meta(self) -> Meta | None:
        meta = self._ctx.call.meta
        return Meta(meta) if meta is not None else None

    @property
    def session(self) -> SessionView:
        return SessionView(self._ctx)

    @property
    def lifespan_context(self) -> Any:
        return self._ctx.lifespan

    @property
    def request(self) -> HttpRequest | None:
        """The HTTP request the call came in on (its headers: ``request.headers``), None
        off HTTP (stdio), as the SDK's."""
        return http_request(self._ctx.call.http_headers)

    @property
    def experimental(self) -> None:
        return None


def _covers(have: Any, wanted: Any) -> bool:
    if not isinstance(wanted, dict):
        return True
    if not isinstance(have, dict):
        return False
    return all(key in have and _covers(have[key], value) for key, value in wanted.items())


__all__ = ["Meta", "RequestContextView", "SessionView", "sdk_types"]
