"""``Server``: the decorator API users write against, and the method handlers behind it.

The decorators mirror the official SDK's ``FastMCP``/``MCPServer`` and PrefectHQ fastmcp, so
tool code moves over unchanged. Everything that can be computed once is computed at
registration (schemas, validators) or once per revision and registry change (listings); a
``tools/call`` is a dict lookup, a compiled validation, the call, and shaping the result.

Functions may be sync or async. Sync functions are called directly on the event loop, so they
must be quick: run slow blocking work in a thread yourself (``await asyncio.to_thread(...)``)
from an async function.
"""

from __future__ import annotations

import base64
import binascii
import weakref
from collections.abc import Callable
from typing import Any, Literal, TypeVar, overload

from jetmcp.call import Call, Handler, Result, Session
from jetmcp.errors import INVALID_PARAMS, McpError
from jetmcp.protocol.revisions import Revision
from jetmcp.server.context import ResourceContents
from jetmcp.server.prompts import Prompt
from jetmcp.server.resources import Resource, ResourceTemplate, UriTemplate, contents_to_wire
from jetmcp.server.tools import Tool, normalize_icons

F = TypeVar("F", bound=Callable[..., Any])
Kind = Literal["tools", "resources", "prompts"]


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


class Server:
    """An MCP server: tools, resources and prompts registered with decorators.

    ``page_size`` turns on cursor pagination of the list methods (``None``: every item in one
    page).
    """

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        instructions: str | None = None,
        *,
        title: str | None = None,
        website_url: str | None = None,
        icons: list[Any] | None = None,
        page_size: int | None = None,
    ) -> None:
        if page_size is not None and page_size < 1:
            raise ValueError("page_size must be at least 1")
        self.name = name
        self.version = version
        self.instructions = instructions
        self.title = title
        self.website_url = website_url
        self.icons = normalize_icons(icons)
        self.page_size = page_size
        self._tools: dict[str, Tool] = {}
        self._resources: dict[str, Resource] = {}
        self._templates: dict[str, ResourceTemplate] = {}
        self._prompts: dict[str, Prompt] = {}
        #: Listings per (kind, revision version), dropped when that registry changes.
        self._listings: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._listeners: list[Callable[[Kind], None]] = []
        #: Every live legacy session (the dispatcher adds them at initialize; a session drops
        #: out when its transport forgets it), for notifications not tied to a request.
        self.sessions: weakref.WeakSet[Session] = weakref.WeakSet()
        #: The method handlers the dispatcher calls, by method name.
        self.handlers: dict[str, Handler] = {
            "tools/list": self._handle_list_tools,
            "tools/call": self._handle_call_tool,
            "resources/list": self._handle_list_resources,
            "resources/templates/list": self._handle_list_templates,
            "resources/read": self._handle_read_resource,
            "prompts/list": self._handle_list_prompts,
            "prompts/get": self._handle_get_prompt,
        }

    # -- initialize ---------------------------------------------------------------------------

    def capabilities(self, revision: Revision) -> dict[str, Any]:
        """The server capabilities for the ``initialize`` result (a fresh dict)."""
        return {
            "logging": {},
            "prompts": {"listChanged": True},
            "resources": {"subscribe": False, "listChanged": True},
            "tools": {"listChanged": True},
        }

    def server_info(self, revision: Revision) -> dict[str, Any]:
        """``serverInfo`` for the ``initialize`` result, with the fields ``revision`` knows."""
        info: dict[str, Any] = {"name": self.name}
        if revision.titles and self.title is not None:
            info["title"] = self.title
        info["version"] = self.version
        if revision.icons:
            if self.website_url is not None:
                info["websiteUrl"] = self.website_url
            if self.icons:
                info["icons"] = self.icons
        return info

    # -- decorators ---------------------------------------------------------------------------

    @overload
    def tool(
        self,
        name_or_fn: F,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: Any = None,
        icons: list[Any] | None = None,
        meta: dict[str, Any] | None = None,
        structured_output: bool | None = None,
    ) -> F: ...

    @overload
    def tool(
        self,
        name_or_fn: str | None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: Any = None,
        icons: list[Any] | None = None,
        meta: dict[str, Any] | None = None,
        structured_output: bool | None = None,
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        name_or_fn: Any = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: Any = None,
        icons: list[Any] | None = None,
        meta: dict[str, Any] | None = None,
        structured_output: bool | None = None,
    ) -> Any:
        """Register a tool: ``@server.tool``, ``@server.tool()`` or ``@server.tool("name")``.

        The input schema comes from the signature (a ``Context`` parameter is injected, not
        listed); the description from the docstring's first paragraph; the output schema
        from the return annotation (``structured_output=False`` turns it off). Returns the
        function unchanged.
        """
        if isinstance(name_or_fn, str):
            name = name_or_fn

        def decorator(fn: F) -> F:
            self.add_tool(
                fn,
                name=name,
                title=title,
                description=description,
                annotations=annotations,
                icons=icons,
                meta=meta,
                structured_output=structured_output,
            )
            return fn

        return decorator(name_or_fn) if callable(name_or_fn) else decorator

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        icons: list[Any] | None = None,
        annotations: Any = None,
        meta: dict[str, Any] | None = None,
    ) -> Callable[[F], F]:
        """Register a resource at ``uri``; with ``{var}`` in it, a template whose variables are
        the function's parameters. Returns the function unchanged.

        The function returns ``str`` (text), ``bytes`` (a base64 blob) or anything else (JSON
        text, ``application/json``).
        """
        if callable(uri):
            raise TypeError("@server.resource needs a URI: use @server.resource('scheme://...')")

        def decorator(fn: F) -> F:
            self.add_resource(
                fn,
                uri,
                name=name,
                title=title,
                description=description,
                mime_type=mime_type,
                icons=icons,
                annotations=annotations,
                meta=meta,
            )
            return fn

        return decorator

    @overload
    def prompt(
        self,
        name_or_fn: F,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        icons: list[Any] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> F: ...

    @overload
    def prompt(
        self,
        name_or_fn: str | None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        icons: list[Any] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Callable[[F], F]: ...

    def prompt(
        self,
        name_or_fn: Any = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        icons: list[Any] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Any:
        """Register a prompt: ``@server.prompt``, ``@server.prompt()`` or
        ``@server.prompt("name")``. Its arguments are the function's parameters.

        The function returns a string (one user message), a message (``Message``, a dict with
        ``role``/``content``, the SDK's message types), content (``Image``...), or a list of
        these.
        """
        if isinstance(name_or_fn, str):
            name = name_or_fn

        def decorator(fn: F) -> F:
            self.add_prompt(
                fn, name=name, title=title, description=description, icons=icons, meta=meta
            )
            return fn

        return decorator(name_or_fn) if callable(name_or_fn) else decorator

    # -- the registries -----------------------------------------------------------------------

    def add_tool(self, fn: Callable[..., Any] | Tool, **kw: Any) -> Tool:
        """Register (or replace, keeping its place in the list) a tool; keywords as for
        :meth:`tool`."""
        tool = fn if isinstance(fn, Tool) else Tool(fn, **kw)
        self._tools[tool.name] = tool
        self._changed("tools")
        return tool

    def remove_tool(self, name: str) -> None:
        """Unregister a tool (``KeyError`` when there is none by that name)."""
        if name not in self._tools:
            raise KeyError(f"Unknown tool: {name}")
        del self._tools[name]
        self._changed("tools")

    def add_resource(
        self,
        fn: Callable[..., Any] | Resource | ResourceTemplate,
        uri: str | None = None,
        **kw: Any,
    ) -> Resource | ResourceTemplate:
        """Register (or replace) a resource or template; keywords as for :meth:`resource`."""
        entry: Resource | ResourceTemplate
        if isinstance(fn, Resource | ResourceTemplate):
            entry = fn
        elif uri is None:
            raise TypeError("add_resource needs the URI of the resource")
        elif UriTemplate.is_template(uri):
            entry = ResourceTemplate(fn, uri, **_resource_kw(kw))
        else:
            entry = Resource(fn, uri, **_resource_kw(kw))
        if isinstance(entry, ResourceTemplate):
            self._templates[entry.uri_template] = entry
        else:
            self._resources[entry.uri] = entry
        self._changed("resources")
        return entry

    def remove_resource(self, uri: str) -> None:
        """Unregister a resource by URI, or a template by its URI template."""
        if uri in self._resources:
            del self._resources[uri]
        elif uri in self._templates:
            del self._templates[uri]
        else:
            raise KeyError(f"Unknown resource: {uri}")
        self._changed("resources")

    def add_prompt(self, fn: Callable[..., Any] | Prompt, **kw: Any) -> Prompt:
        """Register (or replace) a prompt; keywords as for :meth:`prompt`."""
        prompt = fn if isinstance(fn, Prompt) else Prompt(fn, **kw)
        self._prompts[prompt.name] = prompt
        self._changed("prompts")
        return prompt

    def remove_prompt(self, name: str) -> None:
        if name not in self._prompts:
            raise KeyError(f"Unknown prompt: {name}")
        del self._prompts[name]
        self._changed("prompts")

    @property
    def tools(self) -> dict[str, Tool]:
        """The registered tools by name (read-only view: use add/remove to change)."""
        return dict(self._tools)

    @property
    def resources(self) -> dict[str, Resource]:
        return dict(self._resources)

    @property
    def resource_templates(self) -> dict[str, ResourceTemplate]:
        return dict(self._templates)

    @property
    def prompts(self) -> dict[str, Prompt]:
        return dict(self._prompts)

    def add_change_listener(self, listener: Callable[[Kind], None]) -> None:
        """Call ``listener("tools" | "resources" | "prompts")`` after a registry changes (to send
        ``notifications/*/list_changed``)."""
        self._listeners.append(listener)

    def _changed(self, kind: Kind) -> None:
        kinds = ("resources", "templates") if kind == "resources" else (kind,)
        for key in [k for k in self._listings if k[0] in kinds]:
            del self._listings[key]
        for listener in self._listeners:
            listener(kind)

    # -- handlers -----------------------------------------------------------------------------

    def _listing(self, kind: str, revision: Revision) -> list[dict[str, Any]]:
        key = (kind, revision.version)
        cached = self._listings.get(key)
        if cached is None:
            sources: dict[str, dict[str, Any]] = {
                "tools": self._tools,
                "resources": self._resources,
                "templates": self._templates,
                "prompts": self._prompts,
            }
            cached = [item.listing(revision) for item in sources[kind].values()]
            self._listings[key] = cached
        return cached

    def _page(
        self, field: str, items: list[dict[str, Any]], params: dict[str, Any]
    ) -> dict[str, Any]:
        cursor = params.get("cursor")
        start = 0 if cursor is None else _decode_cursor(cursor)
        if self.page_size is None:
            return {field: items if start == 0 else items[start:]}
        end = start + self.page_size
        result: dict[str, Any] = {field: items[start:end]}
        if end < len(items):
            result["nextCursor"] = _encode_cursor(end)
        return result

    def _handle_list_tools(self, params: dict[str, Any], call: Call) -> dict[str, Any]:
        return self._page("tools", self._listing("tools", call.revision), params)

    def _handle_list_resources(self, params: dict[str, Any], call: Call) -> dict[str, Any]:
        return self._page("resources", self._listing("resources", call.revision), params)

    def _handle_list_templates(self, params: dict[str, Any], call: Call) -> dict[str, Any]:
        return self._page("resourceTemplates", self._listing("templates", call.revision), params)

    def _handle_list_prompts(self, params: dict[str, Any], call: Call) -> dict[str, Any]:
        return self._page("prompts", self._listing("prompts", call.revision), params)

    def _handle_call_tool(self, params: dict[str, Any], call: Call) -> Result:
        name = params.get("name")
        tool = self._tools.get(name) if type(name) is str else None
        if tool is None:
            raise McpError(INVALID_PARAMS, f"Unknown tool: {name}")
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        elif type(arguments) is not dict:
            raise McpError(INVALID_PARAMS, f"Arguments for tool {name} must be an object")
        return tool.call(arguments, call, self)

    async def _read(
        self, uri: str, call: Call
    ) -> tuple[Resource | ResourceTemplate, ResourceContents]:
        resource = self._resources.get(uri)
        if resource is not None:
            return resource, await resource.read(uri, call, self)
        for template in self._templates.values():
            variables = template.template.match(uri)
            if variables is not None:
                return template, await template.read(uri, variables, call, self)
        raise McpError(
            call.revision.resource_not_found_code, f"Resource not found: {uri}", data={"uri": uri}
        )

    async def read_resource_contents(self, uri: str, call: Call) -> list[ResourceContents]:
        """Read a resource as Python values (for :meth:`Context.read_resource`)."""
        _, item = await self._read(uri, call)
        return [item]

    async def _handle_read_resource(self, params: dict[str, Any], call: Call) -> dict[str, Any]:
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise McpError(INVALID_PARAMS, "resources/read needs a uri string")
        resource, item = await self._read(uri, call)
        return {"contents": [contents_to_wire(uri, item, call.revision, resource.meta)]}

    async def _handle_get_prompt(self, params: dict[str, Any], call: Call) -> dict[str, Any]:
        name = params.get("name")
        prompt = self._prompts.get(name) if type(name) is str else None
        if prompt is None:
            raise McpError(INVALID_PARAMS, f"Unknown prompt: {name}")
        arguments = params.get("arguments")
        if arguments is None:
            return await prompt.get({}, call, self)
        if not isinstance(arguments, dict):
            raise McpError(INVALID_PARAMS, f"Arguments for prompt {name} must be an object")
        return await prompt.get(arguments, call, self)


def _resource_kw(kw: dict[str, Any]) -> dict[str, Any]:
    allowed = ("name", "title", "description", "mime_type", "icons", "annotations", "meta")
    unknown = set(kw) - set(allowed)
    if unknown:
        raise TypeError(f"unexpected keyword arguments {sorted(unknown)}")
    return {key: kw.get(key) for key in allowed}


__all__ = ["Server"]
