"""The handlers of ``Server``'s methods (lists and their pages, ``tools/call``, reads,
prompts, completion, subscriptions, tasks, ``subscriptions/listen``): a base class of
:class:`~jetmcp.server.app.Server`, which registers them in its method table. The
decorators and registries stay in :mod:`jetmcp.server.app`.
"""

from __future__ import annotations

import base64
import binascii
import logging
import math
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from jetmcp.core.call import Call, EncodedResult, Result, Timed
from jetmcp.core.mrtr import RoundCall, Rounds
from jetmcp.errors import INVALID_PARAMS, METHOD_NOT_FOUND, McpError
from jetmcp.protocol.revisions import Revision
from jetmcp.server import completion
from jetmcp.server.caching import combined
from jetmcp.server.completion import PromptReference
from jetmcp.server.context import ResourceContents
from jetmcp.server.listen import supported_filters
from jetmcp.server.resources import Resource, ResourceTemplate, contents_to_wire
from jetmcp.server.tasks_ext import (
    declares_tasks,
    missing_tasks_extension,
)
from jetmcp.server.tools import Tool

if TYPE_CHECKING:
    from jetmcp.core.principal import Principal
    from jetmcp.server.access import Authorize
    from jetmcp.server.caching import CacheScope
    from jetmcp.server.completion import CompletionHandler
    from jetmcp.server.listen import Subscriptions
    from jetmcp.server.prompts import Prompt
    from jetmcp.server.tasks import TaskManager
    from jetmcp.server.tasks_ext import ModernTasks

log = logging.getLogger("jetmcp")

#: Most per-scope-set listings kept for each kind of component.
_GATED_LISTINGS = 256
#: ``tasks/list`` pages hold this many tasks when the server sets no ``page_size``.
TASKS_PAGE_SIZE = 100


def _encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(str(offset).encode("ascii")).decode("ascii")


def _decode_cursor(cursor: object) -> int:
    if not isinstance(cursor, str):
        raise McpError(INVALID_PARAMS, "Invalid cursor: not a string")
    try:
        text = base64.urlsafe_b64decode(cursor.encode("ascii")).decode("ascii")
    except (binascii.Error, UnicodeError, ValueError):
        raise McpError(INVALID_PARAMS, f"Invalid cursor: {cursor!r}") from None
    if not text.isdigit() or not text.isascii():
        raise McpError(INVALID_PARAMS, f"Invalid cursor: {cursor!r}")
    return int(text)


def _timed(tool: Tool, result: Result) -> Result:
    """A tool call's result, carrying the tool's own deadline when it has one and waits."""
    if tool.timeout is None or isinstance(result, dict):
        return result
    return Timed(result, tool.timeout)


def _no_deadline(result: Result) -> Result:
    """A result that may wait as long as it must (still counted among requests in flight)."""
    return result if isinstance(result, dict) else Timed(result, math.inf)


class Handlers:
    """The method handlers of :class:`~jetmcp.server.app.Server` (its base class). The
    attributes are the server's (declared here for type checkers only)."""

    if TYPE_CHECKING:
        _authorize: Authorize | None
        page_size: int | None
        cache_ttl_ms: int
        cache_scope: CacheScope
        mask_error_details: bool
        fast_paths: bool
        completion_handler: CompletionHandler | None
        _tools: dict[str, Tool]
        _resources: dict[str, Resource]
        _templates: dict[str, ResourceTemplate]
        _prompts: dict[str, Prompt]
        _listings: dict[tuple[str, str], list[dict[str, Any]]]
        _list_results: dict[tuple[str, str], EncodedResult]
        _hints: dict[str, tuple[int, str]]
        _scoped: dict[str, int]
        _gated: dict[tuple[str, str, frozenset[str]], list[dict[str, Any]]]
        _tasks: TaskManager
        _modern_tasks: ModernTasks
        _rounds: Rounds
        _subscriptions: Subscriptions

        def visible(self, component: Any, principal: Principal | None) -> bool: ...
        def capabilities(self, revision: Revision) -> dict[str, Any]: ...

    # -- handlers -----------------------------------------------------------------------------

    def _registry(self, kind: str) -> dict[str, Any]:
        """The registry a listing ``kind`` lists: tools, resources, templates or prompts."""
        sources: dict[str, dict[str, Any]] = {
            "tools": self._tools,
            "resources": self._resources,
            "templates": self._templates,
            "prompts": self._prompts,
        }
        return sources[kind]

    def _listing(self, kind: str, revision: Revision) -> list[dict[str, Any]]:
        key = (kind, revision.version)
        cached = self._listings.get(key)
        if cached is None:
            cached = [item.listing(revision) for item in self._registry(kind).values()]
            self._listings[key] = cached
        return cached

    def _page(
        self,
        field: str,
        items: list[dict[str, Any]],
        params: dict[str, Any],
        page_size: int | None = None,
    ) -> dict[str, Any]:
        cursor = params.get("cursor")
        start = 0 if cursor is None else _decode_cursor(cursor)
        if page_size is None:
            page_size = self.page_size
        if page_size is None:
            return {field: items if start == 0 else items[start:]}
        end = start + page_size
        result: dict[str, Any] = {field: items[start:end]}
        if end < len(items):
            result["nextCursor"] = _encode_cursor(end)
        return result

    def _list_hint(self, kind: str) -> tuple[int, str]:
        hint = self._hints.get(kind)
        if hint is None:
            hint = combined(
                ((item.ttl_ms, item.cache_scope) for item in self._registry(kind).values()),
                self.cache_ttl_ms,
                self.cache_scope,
            )
            self._hints[kind] = hint
        return hint

    def _list(self, field: str, kind: str, params: dict[str, Any], call: Call) -> dict[str, Any]:
        """A ``*/list`` result: a page of ``kind``'s listing under ``field``, with the caching
        hints where the revision has them."""
        revision = call.revision
        if self._scoped[kind] or self._authorize is not None:
            return self._gated_list(field, kind, params, call)
        if (
            self.fast_paths
            and not revision.cache_hints
            and self.page_size is None
            and params.get("cursor") is None
        ):
            # The whole listing, the same for every caller at this revision: encoded once.
            key = (kind, revision.version)
            whole = self._list_results.get(key)
            if whole is None:
                whole = EncodedResult({field: self._listing(kind, revision)})
                self._list_results[key] = whole
            return whole
        result = self._page(field, self._listing(kind, revision), params)
        if revision.cache_hints:
            result["ttlMs"], result["cacheScope"] = self._list_hint(kind)
        return result

    def _gated_list(
        self, field: str, kind: str, params: dict[str, Any], call: Call
    ) -> dict[str, Any]:
        """:meth:`_list` where what is listed depends on who asks: the listing less what
        the caller may not use. Without a hook that depends only on the scopes the caller
        holds among those the components need, so it is kept per such set."""
        revision = call.revision
        principal = call.auth
        listing = self._listing(kind, revision)
        items = self._registry(kind).values()
        if self._authorize is None:
            needed: set[str] = set()
            for item in items:
                needed.update(item.scopes)
            held = principal.scopes & needed if principal is not None else frozenset()
            key = (kind, revision.version, frozenset(held))
            shown = self._gated.get(key)
            if shown is None:
                shown = [
                    e
                    for e, item in zip(listing, items, strict=True)
                    if self.visible(item, principal)
                ]
                if len(self._gated) >= _GATED_LISTINGS:
                    self._gated.clear()
                self._gated[key] = shown
        else:
            shown = [
                e for e, item in zip(listing, items, strict=True) if self.visible(item, principal)
            ]
        result = self._page(field, shown, params)
        if revision.cache_hints:
            ttl, _ = self._list_hint(kind)
            # What is listed depends on the caller's authorization: never a shared cache's.
            result["ttlMs"], result["cacheScope"] = ttl, "private"
        return result

    def _handle_list_tools(self, params: dict[str, Any], call: Call) -> dict[str, Any]:
        return self._list("tools", "tools", params, call)

    def _handle_list_resources(self, params: dict[str, Any], call: Call) -> dict[str, Any]:
        return self._list("resources", "resources", params, call)

    def _handle_list_templates(self, params: dict[str, Any], call: Call) -> dict[str, Any]:
        return self._list("resourceTemplates", "templates", params, call)

    def _handle_list_prompts(self, params: dict[str, Any], call: Call) -> dict[str, Any]:
        return self._list("prompts", "prompts", params, call)

    def _handle_call_tool(self, params: dict[str, Any], call: Call) -> Result:
        name = params.get("name")
        tool = self._tools.get(name) if type(name) is str else None
        if tool is None or (
            (tool.scopes or self._authorize is not None) and not self.visible(tool, call.auth)
        ):
            raise McpError(INVALID_PARAMS, f"Unknown tool: {name}")
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        elif type(arguments) is not dict:
            raise McpError(INVALID_PARAMS, f"Arguments for tool {name} must be an object")
        return self.call_found(tool, arguments, params, call)

    def call_found(
        self, tool: Tool, arguments: dict[str, Any], params: dict[str, Any], call: Call
    ) -> Result:
        """Call ``tool``, found and visible, with ``arguments`` (an object) of a
        ``tools/call`` whose ``params`` these are: what ``tools/call`` does once the tool is
        known (the dispatcher calls it directly for calls the extension planned)."""
        name = tool.name
        if call.revision.mrtr:
            return self._call_tool_modern(tool, arguments, params, call)
        if call.revision.tasks:
            # Older revisions know no tasks: ``task`` is ignored and every tool runs in place.
            task = params.get("task")
            if task is not None:
                if not isinstance(task, dict):
                    raise McpError(INVALID_PARAMS, "Invalid params: task must be an object")
                if tool.task_support == "forbidden":
                    raise McpError(
                        METHOD_NOT_FOUND, f"Tool {name} does not support task-augmented calls"
                    )
                return self._tasks.start(tool, arguments, call, task)
            if tool.task_support == "required":
                raise McpError(METHOD_NOT_FOUND, f"Tool {name} must be called as a task")
        return _timed(tool, tool.call(arguments, call, self))  # type: ignore[arg-type]  # self is the Server

    def _call_tool_modern(
        self, tool: Tool, arguments: dict[str, Any], params: dict[str, Any], call: Call
    ) -> Result:
        # 2026-07-28: the server decides about tasks (a legacy ``task`` hint is ignored), and
        # questions to the client are input rounds.
        with_task = False
        if tool.task_support != "forbidden":
            with_task = declares_tasks(call)
            if not with_task and tool.task_support == "required":
                raise missing_tasks_extension(f"Tool {tool.name}")
        if (
            not with_task
            and tool.context_param is None
            and tool.fast
            and "requestState" not in params
            and "inputResponses" not in params
        ):
            # No way to ask the client anything (questions go through a Context) and no
            # earlier round to check: the round would be opened for nothing.
            return _timed(tool, tool.call(arguments, call, self))  # type: ignore[arg-type]  # self is the Server
        # Plain arguments reach the function as immutable values in a dict of their own, so
        # nothing it does changes the params a sealed round would be bound to.
        plain = tool.fast and tool.arguments.plain is not None and not tool.arguments.var_keyword
        rcall = self._rounds.call(params, call, lazy=plain)
        if with_task:
            return self._modern_tasks.start(tool, arguments, rcall, self)  # type: ignore[arg-type]  # self is the Server
        return _timed(tool, self._rounds.settle(lambda: tool.call(arguments, rcall, self), rcall))  # type: ignore[arg-type]  # self is the Server

    def _run_tool(self, tool: Tool, arguments: dict[str, Any], call: Call) -> Result:
        return tool.call(arguments, call, self)  # type: ignore[arg-type]  # self is the Server

    async def _read(
        self, uri: str, call: Call
    ) -> tuple[Resource | ResourceTemplate, ResourceContents]:
        resource = self._resources.get(uri)
        if resource is not None and self.visible(resource, call.auth):
            return resource, await resource.read(uri, call, self)  # type: ignore[arg-type]  # self is the Server
        for template in self._templates.values():
            variables = template.template.match(uri)
            if variables is not None and self.visible(template, call.auth):
                return template, await template.read(uri, variables, call, self)  # type: ignore[arg-type]  # self is the Server
        raise McpError(
            call.revision.resource_not_found_code, f"Resource not found: {uri}", data={"uri": uri}
        )

    async def read_resource_contents(self, uri: str, call: Call) -> list[ResourceContents]:
        """Read a resource as Python values (for :meth:`Context.read_resource`)."""
        _, item = await self._read(uri, call)
        return [item]

    def _handle_read_resource(self, params: dict[str, Any], call: Call) -> Result:
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise McpError(INVALID_PARAMS, "resources/read needs a uri string")
        if call.revision.mrtr:
            rcall = self._rounds.call(params, call)
            return self._rounds.settle(lambda: self._read_result(uri, rcall), rcall)
        return self._read_result(uri, call)

    async def _read_result(self, uri: str, call: Call) -> dict[str, Any]:
        resource, item = await self._read(uri, call)
        result: dict[str, Any] = {
            "contents": [contents_to_wire(uri, item, call.revision, resource.meta)]
        }
        if call.revision.cache_hints:
            result["ttlMs"] = self.cache_ttl_ms if resource.ttl_ms is None else resource.ttl_ms
            result["cacheScope"] = resource.cache_scope or self.cache_scope
        return result

    def _handle_get_prompt(self, params: dict[str, Any], call: Call) -> Result:
        name = params.get("name")
        prompt = self._prompts.get(name) if type(name) is str else None
        if prompt is None or not self.visible(prompt, call.auth):
            raise McpError(INVALID_PARAMS, f"Unknown prompt: {name}")
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        elif not isinstance(arguments, dict):
            raise McpError(INVALID_PARAMS, f"Arguments for prompt {name} must be an object")
        if call.revision.mrtr:
            rcall: RoundCall = self._rounds.call(params, call)
            return self._rounds.settle(lambda: prompt.get(arguments, rcall, self), rcall)  # type: ignore[arg-type]  # self is the Server
        return prompt.get(arguments, call, self)  # type: ignore[arg-type]  # self is the Server

    # -- completion, subscriptions ------------------------------------------------------------

    def _handle_complete(self, params: dict[str, Any], call: Call) -> Result:
        ref, argument, context = completion.parse_params(params, call)
        if isinstance(ref, PromptReference):
            prompt = self._prompts.get(ref.name)
            if prompt is None or not self.visible(prompt, call.auth):
                raise McpError(INVALID_PARAMS, f"Unknown prompt: {ref.name}")
        else:
            target = self._templates.get(ref.uri) or self._resources.get(ref.uri)
            if target is None or not self.visible(target, call.auth):
                raise McpError(INVALID_PARAMS, f"Unknown resource template: {ref.uri}")
        handler = self.completion_handler
        if handler is None:
            return {"completion": {"values": []}}
        return completion.complete(handler, ref, argument, context, self.mask_error_details)

    def _subscription_uri(self, params: dict[str, Any]) -> str:
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise McpError(INVALID_PARAMS, "Invalid params: uri must be a string")
        return uri

    def _handle_subscribe(self, params: dict[str, Any], call: Call) -> Result:
        uri = self._subscription_uri(params)
        # A resource the caller may not read is subscribed like an unknown URI: accepted,
        # and never announced.
        if call.session is not None and self._may_read(uri, call.auth):
            return call.session.subscribe(uri)
        return {}

    def _may_read(self, uri: str, principal: Principal | None) -> bool:
        """Whether a resource read of ``uri`` would reach something ``principal`` may read
        (True for a URI nothing serves: those are subscribed as they always were)."""
        if not any(self._scoped[k] for k in ("resources", "templates")) and self._authorize is None:
            return True
        resource = self._resources.get(uri)
        if resource is not None:
            return self.visible(resource, principal)
        matched = [t for t in self._templates.values() if t.template.match(uri) is not None]
        return not matched or any(self.visible(t, principal) for t in matched)

    def _handle_unsubscribe(self, params: dict[str, Any], call: Call) -> Result:
        uri = self._subscription_uri(params)
        if call.session is not None:
            return call.session.unsubscribe(uri)
        return {}

    # -- tasks ---------------------------------------------------------------------------------
    # Which revision has which tasks/* method is the revision table's business (the
    # dispatcher refuses the others); a method both kinds of task have goes to the kind the
    # revision has.

    def _handle_get_task(self, params: dict[str, Any], call: Call) -> Result:
        if call.revision.tasks_extension:
            return self._modern_tasks.get(params, call)
        return self._tasks.get(params, call)

    def _handle_task_result(self, params: dict[str, Any], call: Call) -> Result:
        # Waits for the task, which runs as long as it must: no request deadline.
        return _no_deadline(self._tasks.result(params, call))

    def _handle_list_tasks(self, params: dict[str, Any], call: Call) -> Result:
        tasks = self._tasks.list(call)
        if isinstance(tasks, list):
            return self._page("tasks", tasks, params, self.page_size or TASKS_PAGE_SIZE)
        return self._page_later("tasks", tasks, params, self.page_size or TASKS_PAGE_SIZE)

    async def _page_later(
        self,
        field: str,
        items: Awaitable[list[dict[str, Any]]],
        params: dict[str, Any],
        page_size: int,
    ) -> dict[str, Any]:
        return self._page(field, await items, params, page_size)

    def _handle_cancel_task(self, params: dict[str, Any], call: Call) -> Result:
        if call.revision.tasks_extension:
            return self._modern_tasks.cancel(params, call)
        return self._tasks.cancel(params, call)

    def _handle_update_task(self, params: dict[str, Any], call: Call) -> Result:
        return self._modern_tasks.update(params, call)

    # -- subscriptions/listen (2026-07-28) ---------------------------------------------------

    def _handle_listen(self, params: dict[str, Any], call: Call) -> Result:
        supported = supported_filters(self.capabilities(call.revision))
        # Open until the client leaves or the server stops: no request deadline.
        readable = None
        if self._authorize is not None or self._scoped["resources"] or self._scoped["templates"]:
            auth = call.auth
            readable = lambda uri: self._may_read(uri, auth)  # noqa: E731
        return _no_deadline(self._subscriptions.listen(params, call, supported, readable))

    async def close_subscriptions(self, timeout: float = 5.0) -> None:  # noqa: ASYNC109
        """End every open ``subscriptions/listen`` request with its final result
        (``{"resultType": "complete", "_meta": {subscriptionId}}``): for transports shutting
        down. A listen that starts afterwards is ended the same way once acknowledged. Waits
        at most ``timeout`` seconds for the results to be handed over."""
        await self._subscriptions.close_all(timeout)
