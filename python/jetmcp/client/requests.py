"""The requests a :class:`~jetmcp.client.session.Client` sends for its caller: any method,
the typed methods of each kind (tools, resources, prompts, completion), pagination and
batches. A base class of ``Client``, which sends them all through ``Client._run``.
"""

from __future__ import annotations

from collections.abc import (
    AsyncIterator,
    Mapping,
    Sequence,
)
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from jetmcp.client.batch import (
    BatchBuilder,
    Response,
    complete_params,
    cursor_params,
    split_messages,
)
from jetmcp.client.support import encode_notification as _encode_notification
from jetmcp.client.transports import (
    Transport,
)
from jetmcp.client.types import (
    CallToolResult,
    CompleteResult,
    EmptyResult,
    GetPromptResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    Tool,
)
from jetmcp.errors import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    McpError,
)
from jetmcp.protocol.revisions import Revision

T = TypeVar("T", bound=BaseModel)


class Requests:
    """The caller's requests (a base class of :class:`~jetmcp.client.session.Client`)."""

    if TYPE_CHECKING:
        _closed: BaseException | None
        _transport: Transport

        @property
        def revision(self) -> Revision: ...
        async def _run(
            self,
            requests: Sequence[tuple[str, dict[str, Any]]],
            notifications: Sequence[tuple[str, dict[str, Any] | None]] = (),
        ) -> list[Response]: ...
        def _note_headers(self, note: bytes) -> list[tuple[str, str]]: ...

    # ------------------------------------------------------------------ requests

    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Any request: its result as a dict, or McpError."""
        (resp,) = await self._run([(method, dict(params or {}))])
        return resp.unwrap()

    async def _typed(
        self,
        result_type: type[T],
        method: str,
        params: dict[str, Any],
    ) -> T:
        (resp,) = await self._run([(method, params)])
        return resp.into_result(result_type)

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification (nothing answers it)."""
        if self._closed is not None:
            raise self._closed
        note = _encode_notification(method, dict(params) if params is not None else None)
        await self._transport.send(note, self._note_headers(note))

    async def ping(self) -> None:
        """``ping`` (legacy revisions; 2026-07-28 removed it)."""
        rev = self.revision
        if not rev.serves("ping"):
            raise McpError(
                METHOD_NOT_FOUND,
                f"ping was removed in {rev.version}: this session speaks {rev.version}; "
                "use a request of your own as a liveness probe",
            )
        await self._typed(EmptyResult, "ping", {})

    async def list_tools(self, cursor: str | None = None) -> ListToolsResult:
        return await self._typed(ListToolsResult, "tools/list", cursor_params(cursor))

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        meta: Mapping[str, Any] | None = None,
    ) -> CallToolResult:
        params: dict[str, Any] = {"name": name, "arguments": dict(arguments or {})}
        if meta:
            params["_meta"] = dict(meta)
        return await self._typed(CallToolResult, "tools/call", params)

    async def list_resources(self, cursor: str | None = None) -> ListResourcesResult:
        return await self._typed(ListResourcesResult, "resources/list", cursor_params(cursor))

    async def read_resource(self, uri: str) -> ReadResourceResult:
        return await self._typed(ReadResourceResult, "resources/read", {"uri": uri})

    async def list_resource_templates(
        self, cursor: str | None = None
    ) -> ListResourceTemplatesResult:
        return await self._typed(
            ListResourceTemplatesResult, "resources/templates/list", cursor_params(cursor)
        )

    async def list_prompts(self, cursor: str | None = None) -> ListPromptsResult:
        return await self._typed(ListPromptsResult, "prompts/list", cursor_params(cursor))

    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
    ) -> GetPromptResult:
        params = {"name": name, "arguments": dict(arguments or {})}
        return await self._typed(GetPromptResult, "prompts/get", params)

    async def complete(
        self,
        ref: Mapping[str, Any],
        argument: Mapping[str, Any] | tuple[str, str],
        *,
        context: Mapping[str, str] | None = None,
    ) -> CompleteResult:
        """``completion/complete``: ``ref`` is ``{"type": "ref/prompt", "name": ...}`` or
        ``{"type": "ref/resource", "uri": ...}``; ``argument`` is ``(name, value)`` or a dict;
        ``context`` the other arguments already given (2025-06-18 on)."""
        params = complete_params(ref, argument)
        if context is not None:
            params["context"] = {"arguments": dict(context)}
        return await self._typed(CompleteResult, "completion/complete", params)

    # pagination ---------------------------------------------------------------

    async def _pages(self, method: str, result_type: type[Any], field: str) -> AsyncIterator[Any]:
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            page = await self._typed(result_type, method, cursor_params(cursor))
            for item in getattr(page, field):
                yield item
            cursor = page.next_cursor
            if not cursor:
                return
            if cursor in seen:
                raise McpError(INVALID_PARAMS, f"{method}: the server repeated cursor {cursor!r}")
            seen.add(cursor)

    def iter_tools(self) -> AsyncIterator[Tool]:
        """Every tool, page after page (following ``nextCursor``)."""
        return self._pages("tools/list", ListToolsResult, "tools")

    def iter_resources(self) -> AsyncIterator[Resource]:
        return self._pages("resources/list", ListResourcesResult, "resources")

    def iter_resource_templates(self) -> AsyncIterator[ResourceTemplate]:
        return self._pages(
            "resources/templates/list", ListResourceTemplatesResult, "resource_templates"
        )

    def iter_prompts(self) -> AsyncIterator[Prompt]:
        return self._pages("prompts/list", ListPromptsResult, "prompts")

    async def list_all_tools(self) -> list[Tool]:
        return [tool async for tool in self.iter_tools()]

    async def list_all_resources(self) -> list[Resource]:
        return [r async for r in self.iter_resources()]

    async def list_all_resource_templates(self) -> list[ResourceTemplate]:
        return [t async for t in self.iter_resource_templates()]

    async def list_all_prompts(self) -> list[Prompt]:
        return [p async for p in self.iter_prompts()]

    # batches ----------------------------------------------------------------

    def batch(self) -> BatchBuilder:
        """A :class:`BatchBuilder`: chain requests, then ``await builder.send()``."""
        return BatchBuilder(self)  # type: ignore[arg-type]  # self is the Client

    async def call_batch(self, items: Sequence[Mapping[str, Any]]) -> list[Response]:
        """Send hand-built JSON-RPC messages: one Response per request (those with an
        ``id``), in order, each carrying the caller's id. On the wire every request has an id
        of the client's own, so ids the caller repeats or reuses never mix answers up."""
        requests, ids, notifications = split_messages(items)
        responses = await self._run(requests, notifications)
        for response, caller_id in zip(responses, ids, strict=True):
            response.id = caller_id
        return responses


# --------------------------------------------------------------------------- helpers
