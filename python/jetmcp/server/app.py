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

import asyncio
import logging
import weakref
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, Unpack, overload

from jetmcp import _wire
from jetmcp._wire import encode_notification
from jetmcp.core.call import NULL_SINK, EncodedResult, Handler, Session
from jetmcp.core.mrtr import Rounds
from jetmcp.core.request_state import DEFAULT_TTL_SECONDS, StateSealer
from jetmcp.core.threads import calling_loop
from jetmcp.protocol.revisions import Revision
from jetmcp.server.access import allowed
from jetmcp.server.caching import CacheScope, check_hint
from jetmcp.server.completion import CompletionHandler
from jetmcp.server.context import Context
from jetmcp.server.handlers import Handlers
from jetmcp.server.listen import Subscriptions
from jetmcp.server.options import ToolKeywords
from jetmcp.server.prompts import Prompt
from jetmcp.server.resources import Resource, ResourceTemplate, UriTemplate
from jetmcp.server.serving import Serving, check_options
from jetmcp.server.tasks import TaskManager
from jetmcp.server.tasks_ext import (
    TASKS_EXTENSION,
    ModernTasks,
)
from jetmcp.server.tools import Tool, normalize_icons, tagged_meta

if TYPE_CHECKING:
    from jetmcp.core.principal import Principal, TokenVerifier
    from jetmcp.server.access import Authorize

log = logging.getLogger("jetmcp")

F = TypeVar("F", bound=Callable[..., Any])
#: A lifespan: called with the server, gives the async context manager held open.
Lifespan = Callable[[Any], AbstractAsyncContextManager[Any]]


@asynccontextmanager
async def _no_lifespan() -> AsyncIterator[dict[str, Any]]:
    yield {}


Kind = Literal["tools", "resources", "prompts"]

_LIST_CHANGED: dict[str, str] = {
    "tools": "notifications/tools/list_changed",
    "resources": "notifications/resources/list_changed",
    "prompts": "notifications/prompts/list_changed",
}


class Server(Handlers, Serving):
    """An MCP server: tools, resources and prompts registered with decorators.

    ``name`` is optional (``"jetmcp"``). ``lifespan(server)`` is an async context manager
    held open while the server is served (per worker process): what it yields is
    ``ctx.lifespan`` / ``ctx.request_context.lifespan_context``. The official SDK's and
    fastmcp's other constructor keywords are accepted where jetmcp can honour them (see
    :mod:`jetmcp.server.serving`); ``mask_error_details`` (default True, as SDK 2.x) hides
    the text of unexpected tool exceptions from clients.

    ``page_size`` turns on cursor pagination of the list methods (``None``: every item in one
    page; ``tasks/list`` then pages by 100).

    Tasks (2025-11-25): ``task_ttl_ms`` is the retention of a task whose client asked for
    none, ``task_max_ttl_ms`` caps what a client may ask (None: no cap; ``task_ttl_ms`` None:
    kept for the session's life), ``task_poll_interval_ms`` the polling interval suggested.
    The 2026-07-28 tasks extension keeps its tasks ``task_ttl_ms`` (capped the same way).

    2026-07-28: ``cache_ttl_ms``/``cache_scope`` are the caching hints of whatever sets none
    (see :mod:`jetmcp.server.caching`); ``state_key`` seals the ``requestState`` of input
    rounds and ``request_state_ttl`` (seconds) is how long a round may wait for its retry
    (see :mod:`jetmcp.core.request_state`).
    """

    #: The attributes ``serverInfo`` is made of: setting one counts as an identity change.
    _IDENTITY = frozenset({"name", "version", "title", "website_url", "icons"})
    #: Counts identity changes (what caches of ``serverInfo`` check).
    identity = 0
    #: The Context made for a tool that takes one (by the dispatcher or the extension).
    context_class: type[Context] = Context

    def __setattr__(self, name: str, value: Any) -> None:
        if name in Server._IDENTITY:
            object.__setattr__(self, "identity", self.identity + 1)
        object.__setattr__(self, name, value)

    def __class_getitem__(cls, item: Any) -> type[Server]:
        # ``Server[State]`` annotations, as ``MCPServer[State]`` is written.
        return cls

    def __init__(
        self,
        name: str | None = None,
        version: str = "0.1.0",
        instructions: str | None = None,
        *,
        title: str | None = None,
        website_url: str | None = None,
        icons: list[Any] | None = None,
        page_size: int | None = None,
        task_ttl_ms: int | None = 3_600_000,
        task_max_ttl_ms: int | None = 86_400_000,
        task_poll_interval_ms: int | None = 1000,
        cache_ttl_ms: int = 0,
        cache_scope: CacheScope = "private",
        state_key: str | bytes | None = None,
        request_state_ttl: float = DEFAULT_TTL_SECONDS,
        lifespan: Lifespan | None = None,
        mask_error_details: bool = True,
        fast_paths: bool = True,
        auth: Any = None,
        token_verifier: TokenVerifier | None = None,
        authorize: Authorize | None = None,
        include_tags: Iterable[str] | None = None,
        exclude_tags: Iterable[str] | None = None,
        **sdk_options: Any,
    ) -> None:
        if page_size is not None and page_size < 1:
            raise ValueError("page_size must be at least 1")
        check_hint(cache_ttl_ms, cache_scope)
        if cache_ttl_ms is None or cache_scope is None:
            raise ValueError("the server's cache_ttl_ms and cache_scope cannot be None")
        self.cache_ttl_ms = cache_ttl_ms
        self.cache_scope: CacheScope = cache_scope
        self.sdk_options = check_options(sdk_options)
        #: How bearer tokens are checked over HTTP: a :class:`jetmcp.auth.AuthConfig` (or
        #: the official SDK's ``AuthSettings``) and/or a verifier of your own; the
        #: ``--auth-*`` flags override both. See :mod:`jetmcp.auth`.
        self.auth = auth
        self.token_verifier = token_verifier
        if token_verifier is not None and not callable(
            getattr(token_verifier, "verify_token", None)
        ):
            raise TypeError("token_verifier must have an async verify_token(token) method")
        self._authorize: Authorize | None = None
        self.custom_routes: list[Any] = []
        #: Unexpected exceptions of tools answer "Error executing tool NAME" (SDK 2.x's
        #: text) instead of their own text, and those of resources, prompts and completions
        #: "Error reading resource URI" and the like; ``ToolError``, ``ResourceError``,
        #: ``PromptError`` and ``McpError`` always show. The log keeps the detail.
        self.mask_error_details = mask_error_details
        #: The fast paths (calls of plain tools run by the extension, plain arguments and
        #: primitive results taken without pydantic, listings encoded once). Off, every
        #: request takes the general path: the same replies, slower (what the differential
        #: tests compare against).
        self.fast_paths = fast_paths
        self.name = name if name is not None else "jetmcp"
        self.version = version
        self.instructions = instructions
        self.title = title
        self.website_url = website_url
        self.icons = normalize_icons(icons)
        self.page_size = page_size
        #: ``lifespan(server)``: an async context manager the transports hold open while
        #: they serve (per worker process), and what it yields while it is open.
        self.lifespan = lifespan
        self.lifespan_context: Any = None
        self._tools: dict[str, Tool] = {}
        #: Registered tools kept out of listings and calls: disabled, or filtered out by
        #: tags (:meth:`exposes`).
        self._inactive: dict[str, Tool] = {}
        #: fastmcp's tag filters: only tools with one of ``include_tags`` (when given), and
        #: none with one of ``exclude_tags``, are listed and callable.
        self.include_tags = None if include_tags is None else frozenset(include_tags)
        self.exclude_tags = None if exclude_tags is None else frozenset(exclude_tags)
        #: The tools the extension can call by itself (:attr:`Tool.route`), by name; the
        #: dispatcher hands this dict to it.
        self.routes = _wire.Routes()
        self._resources: dict[str, Resource] = {}
        self._templates: dict[str, ResourceTemplate] = {}
        self._prompts: dict[str, Prompt] = {}
        #: Listings per (kind, revision version), dropped when that registry changes.
        self._listings: dict[tuple[str, str], list[dict[str, Any]]] = {}
        #: Whole first-page list results per (kind, revision version) where the result is
        #: the listing alone (no pagination, no caching hints), encoded once; dropped with
        #: the listings.
        self._list_results: dict[tuple[str, str], EncodedResult] = {}
        #: The caching hint of each list, dropped with its listings.
        self._hints: dict[str, tuple[int, str]] = {}
        #: Per registry kind: how many of its components need scopes.
        self._scoped: dict[str, int] = {"tools": 0, "resources": 0, "templates": 0, "prompts": 0}
        #: Listings filtered for a set of scopes held, per (kind, revision version, held
        #: scopes), where no ``authorize`` hook makes them depend on more than that.
        self._gated: dict[tuple[str, str, frozenset[str]], list[dict[str, Any]]] = {}
        self._listeners: list[Callable[[Kind], None]] = []
        #: Every live legacy session (the dispatcher adds them at initialize; a session drops
        #: out when its transport forgets it), for notifications not tied to a request.
        self.sessions: weakref.WeakSet[Session] = weakref.WeakSet()
        self._session_states: weakref.WeakKeyDictionary[Session, dict[str, Any]] = (
            weakref.WeakKeyDictionary()
        )
        #: Set by a transport whose sessions live in a store shared between processes
        #: (Redis): list changes and resource updates then reach the sessions and listen
        #: streams of every worker through it, instead of this process's alone.
        self.fanout: Fanout | None = None
        #: The ``@completion()`` handler, if any.
        self.completion_handler: CompletionHandler | None = None
        self._tasks = TaskManager(
            self._run_tool,
            default_ttl_ms=task_ttl_ms,
            max_ttl_ms=task_max_ttl_ms,
            poll_interval_ms=task_poll_interval_ms,
        )
        modern_ttl = task_ttl_ms
        if task_max_ttl_ms is not None and (modern_ttl is None or modern_ttl > task_max_ttl_ms):
            modern_ttl = task_max_ttl_ms
        self._modern_tasks = ModernTasks(ttl_ms=modern_ttl, poll_interval_ms=task_poll_interval_ms)
        #: 2026-07-28 input rounds, and the open ``subscriptions/listen`` requests.
        self._rounds = Rounds(StateSealer(state_key, request_state_ttl))
        self._subscriptions = Subscriptions()
        #: Notification sends scheduled from registry changes (strong references).
        self._sending: set[asyncio.Task[None]] = set()
        #: The method handlers the dispatcher calls, by method name.
        self.handlers: dict[str, Handler] = {
            "tools/list": self._handle_list_tools,
            "tools/call": self._handle_call_tool,
            "resources/list": self._handle_list_resources,
            "resources/templates/list": self._handle_list_templates,
            "resources/read": self._handle_read_resource,
            "resources/subscribe": self._handle_subscribe,
            "resources/unsubscribe": self._handle_unsubscribe,
            "prompts/list": self._handle_list_prompts,
            "prompts/get": self._handle_get_prompt,
            "completion/complete": self._handle_complete,
            "tasks/get": self._handle_get_task,
            "tasks/result": self._handle_task_result,
            "tasks/list": self._handle_list_tasks,
            "tasks/cancel": self._handle_cancel_task,
            "tasks/update": self._handle_update_task,
            "subscriptions/listen": self._handle_listen,
        }
        #: The built-in ``tools/call`` handler: while it is the one in :attr:`handlers`, the
        #: dispatcher may call :attr:`routes` in the extension instead.
        self.builtin_call_tool: Handler = self.handlers["tools/call"]
        self.authorize = authorize

    # -- access --------------------------------------------------------------------------------

    @property
    def authorize(self) -> Authorize | None:
        """``authorize(principal, component) -> bool``: whether a principal may see and use a
        tool, resource, template or prompt (principal None when auth is off). What it refuses
        is left out of every listing and answered like something that does not exist."""
        return self._authorize

    @authorize.setter
    def authorize(self, hook: Authorize | None) -> None:
        if hook is not None and not callable(hook):
            raise TypeError("authorize must be a function (principal, component) -> bool")
        self._authorize = hook
        # The extension calls tools without asking anyone: with a hook, none is routed.
        for tool in self._tools.values():
            self._route(tool)
        self._gated.clear()

    def _route(self, tool: Tool) -> None:
        if (
            tool.route is not None
            and self.fast_paths
            and not tool.scopes
            and self._authorize is None
        ):
            self.routes[tool.name] = tool.route
        else:
            self.routes.pop(tool.name)

    def visible(self, component: Any, principal: Principal | None) -> bool:
        """Whether ``principal`` may see and use ``component`` (its scopes, then the
        ``authorize`` hook)."""
        if not component.scopes and self._authorize is None:
            return True
        return allowed(component, principal, self._authorize)

    def scopes_in_use(self) -> set[str]:
        """Every scope some component needs (the metadata's ``scopes_supported``)."""
        out: set[str] = set()
        for registry in (self._tools, self._resources, self._templates, self._prompts):
            for item in registry.values():
                out.update(item.scopes)
        return out

    def _count_scoped(self, kind: str, old: Any, new: Any) -> None:
        self._scoped[kind] += (1 if new is not None and new.scopes else 0) - (
            1 if old is not None and old.scopes else 0
        )

    def session_state(self, session: Session) -> dict[str, Any]:
        """The state ``ctx.set_state`` keeps for ``session`` (dropped with the session)."""
        state = self._session_states.get(session)
        if state is None:
            state = {}
            self._session_states[session] = state
        return state

    # -- lifespan ------------------------------------------------------------------------------

    def enter_lifespan(self) -> AbstractAsyncContextManager[Any]:
        """The context manager the transports hold open while they serve: ``lifespan(self)``,
        or one that yields ``{}`` (as the SDK's default does)."""
        if self.lifespan is None:
            return _no_lifespan()
        return self.lifespan(self)

    # -- initialize ---------------------------------------------------------------------------

    def capabilities(self, revision: Revision) -> dict[str, Any]:
        """The server capabilities for the ``initialize`` result (a fresh dict)."""
        caps: dict[str, Any] = {}
        if revision.completions_capability:
            caps["completions"] = {}
        caps["logging"] = {}
        caps["prompts"] = {"listChanged": True}
        caps["resources"] = {"subscribe": True, "listChanged": True}
        if revision.tasks:
            caps["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        caps["tools"] = {"listChanged": True}
        if revision.tasks_extension:
            caps["extensions"] = {TASKS_EXTENSION: {}}
        return caps

    @property
    def cache_defaults(self) -> dict[str, Any]:
        """The server's own caching hints (for ``server/discover`` on 2026-07-28)."""
        return {"ttlMs": self.cache_ttl_ms, "cacheScope": self.cache_scope}

    def server_info(self, revision: Revision) -> dict[str, Any]:
        """``serverInfo`` for the ``initialize`` result, with the fields ``revision`` knows."""
        info: dict[str, Any] = {"name": self.name}
        if revision.titles and self.title is not None:
            info["title"] = self.title
        info["version"] = self.version
        if revision.website_url and self.website_url is not None:
            info["websiteUrl"] = self.website_url
        if revision.icons and self.icons:
            info["icons"] = self.icons
        return info

    # -- decorators ---------------------------------------------------------------------------

    @overload
    def tool(self, name_or_fn: F, /, **options: Unpack[ToolKeywords]) -> F: ...

    @overload
    def tool(
        self, name_or_fn: str | None = None, /, **options: Unpack[ToolKeywords]
    ) -> Callable[[F], F]: ...

    def tool(self, name_or_fn: Any = None, /, **options: Unpack[ToolKeywords]) -> Any:
        """Register a tool: ``@server.tool``, ``@server.tool()`` or ``@server.tool("name")``.

        The input schema comes from the signature (a ``Context`` parameter is injected, not
        listed); the description from the docstring's first paragraph; the output schema
        from the return annotation (``structured_output=False`` turns it off). Returns the
        function unchanged.

        ``input_schema`` publishes that JSON schema instead, verbatim (any 2020-12 keywords:
        ``$schema``, ``$defs``, ``allOf``, ``if``/``then``/``else``...); arguments are still
        validated against the function's parameters only, and a ``**kwargs`` parameter takes
        the ones it does not name. ``task_support`` (2025-11-25 tasks, and the 2026-07-28
        tasks extension): ``"forbidden"`` (default), ``"optional"`` or ``"required"``;
        ``defer_task`` (2026-07-28) runs a task tool in the request until it awaits
        ``ctx.start_task()`` (see :mod:`jetmcp.server.tasks_ext`). ``ttl_ms``/``cache_scope``:
        the tool's caching hints for ``tools/list`` (see :mod:`jetmcp.server.caching`).
        ``timeout`` (seconds, the name fastmcp gives it): how long a call may wait before it
        is answered -32001, instead of the server's ``--request-timeout-seconds``
        (``math.inf``: no limit). A synchronous tool runs in a thread pool, or inline once
        measured fast (:mod:`jetmcp.core.threads`; ``add_tool(fn, run_in_thread=...)``).
        """
        if isinstance(name_or_fn, str):
            options["name"] = name_or_fn

        def decorator(fn: F) -> F:
            self.add_tool(fn, **options)
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
        ttl_ms: int | None = None,
        cache_scope: CacheScope | None = None,
        scopes: Iterable[str] | None = None,
        tags: Iterable[str] | None = None,
        enabled: bool = True,
    ) -> Callable[[F], F]:
        """Register a resource at ``uri``; with ``{var}`` in it, a template whose variables are
        the function's parameters. Returns the function unchanged.

        The function returns ``str`` (text), ``bytes`` (a base64 blob) or anything else (JSON
        text, ``application/json``). ``ttl_ms``/``cache_scope``: its caching hints for the
        lists and ``resources/read`` (2026-07-28).
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
                ttl_ms=ttl_ms,
                cache_scope=cache_scope,
                scopes=scopes,
                tags=tags,
                enabled=enabled,
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
        ttl_ms: int | None = None,
        cache_scope: CacheScope | None = None,
        scopes: Iterable[str] | None = None,
        tags: Iterable[str] | None = None,
        enabled: bool = True,
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
        ttl_ms: int | None = None,
        cache_scope: CacheScope | None = None,
        scopes: Iterable[str] | None = None,
        tags: Iterable[str] | None = None,
        enabled: bool = True,
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
        ttl_ms: int | None = None,
        cache_scope: CacheScope | None = None,
        scopes: Iterable[str] | None = None,
        tags: Iterable[str] | None = None,
        enabled: bool = True,
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
                fn,
                name=name,
                title=title,
                description=description,
                icons=icons,
                meta=meta,
                ttl_ms=ttl_ms,
                cache_scope=cache_scope,
                scopes=scopes,
                tags=tags,
                enabled=enabled,
            )
            return fn

        return decorator(name_or_fn) if callable(name_or_fn) else decorator

    def completion(self) -> Callable[[F], F]:
        """Register the ``completion/complete`` handler (``@server.completion()``, as in the
        official SDK): ``handler(ref, argument, context)``, sync or async, returning a list of
        strings, a :class:`~jetmcp.server.completion.Completion` or None. See
        :mod:`jetmcp.server.completion`. Without one every completion is empty."""

        def decorator(fn: F) -> F:
            self.completion_handler = fn
            return fn

        return decorator

    # -- the registries -----------------------------------------------------------------------

    def add_tool(self, fn: Callable[..., Any] | Tool, **options: Unpack[ToolKeywords]) -> Tool:
        """Register (or replace, keeping its place in the list) a tool; keywords as for
        :meth:`tool` (:class:`~jetmcp.server.options.ToolOptions`)."""
        tool = fn if isinstance(fn, Tool) else Tool(fn, **options)
        tool.mask_errors = self.mask_error_details
        tool.fast = self.fast_paths
        replaced = self._tools.get(tool.name) or self._inactive.get(tool.name)
        if replaced is not None and replaced is not tool:
            self._disown(replaced)
        if self._toggled not in tool.owners:
            tool.owners.append(self._toggled)
        self._place(tool)
        self._changed("tools")
        return tool

    def _place(self, tool: Tool) -> None:
        """Put ``tool`` where it belongs: served (:attr:`_tools`, its route) when
        :meth:`exposes` says so, else held apart (:attr:`_inactive`)."""
        name = tool.name
        if self.exposes(tool):
            self._inactive.pop(name, None)
            self._count_scoped("tools", self._tools.get(name), tool)
            self._tools[name] = tool
            self._route(tool)
        else:
            self._count_scoped("tools", self._tools.pop(name, None), None)
            self.routes.pop(name)
            self._inactive[name] = tool

    def _toggled(self, tool: Tool) -> None:
        """A tool of this server was enabled or disabled (``tool.enable()``)."""
        name = tool.name
        if self._tools.get(name) is tool or self._inactive.get(name) is tool:
            self._place(tool)
            self._changed("tools")

    def _disown(self, tool: Tool) -> None:
        if self._toggled in tool.owners:
            tool.owners.remove(self._toggled)

    def exposes(self, tool: Tool) -> bool:
        """Whether ``tool`` is listed and callable: enabled, and passing the server's tag
        filters (fastmcp's: ``include_tags`` keeps only tools with one of them,
        ``exclude_tags`` drops tools with any of them)."""
        if not tool.enabled:
            return False
        include = self.include_tags
        if include is not None and not tool.tags & include:
            return False
        exclude = self.exclude_tags
        return exclude is None or not tool.tags & exclude

    def enable(
        self, *, names: Iterable[str] | None = None, tags: Iterable[str] | None = None
    ) -> Server:
        """Enable the registered tools with one of ``names`` and/or one of ``tags`` (both
        given: tools matching both), as fastmcp's ``server.enable(names=, tags=)`` does for
        tools; returns the server."""
        self._set_enabled(True, names, tags)
        return self

    def disable(
        self, *, names: Iterable[str] | None = None, tags: Iterable[str] | None = None
    ) -> Server:
        """Disable the registered tools matching as :meth:`enable` does: they leave the
        listings, and a call of one is answered as one of an unknown tool."""
        self._set_enabled(False, names, tags)
        return self

    def _set_enabled(
        self, enabled: bool, names: Iterable[str] | None, tags: Iterable[str] | None
    ) -> None:
        if names is None and tags is None:
            raise TypeError("name the tools to change: names=..., tags=... or both")
        wanted_names = None if names is None else set(names)
        wanted_tags = None if tags is None else frozenset(tags)
        for tool in [*self._tools.values(), *self._inactive.values()]:
            if wanted_names is not None and tool.name not in wanted_names:
                continue
            if wanted_tags is not None and not tool.tags & wanted_tags:
                continue
            tool._toggle(enabled)

    def remove_tool(self, name: str) -> None:
        """Unregister a tool (``KeyError`` when there is none by that name)."""
        if name in self._inactive:
            self._disown(self._inactive.pop(name))
            self._changed("tools")
            return
        if name not in self._tools:
            raise KeyError(f"Unknown tool: {name}")
        removed = self._tools.pop(name)
        self._disown(removed)
        self._count_scoped("tools", removed, None)
        self.routes.pop(name)
        self._changed("tools")

    def add_resource(
        self,
        fn: Callable[..., Any] | Resource | ResourceTemplate,
        uri: str | None = None,
        **kw: Any,
    ) -> Resource | ResourceTemplate | None:
        """Register (or replace) a resource or template; keywords as for :meth:`resource`
        (one that is not ``enabled``, or that the server's tag filters drop, is not
        registered: None)."""
        if not self._admitted(kw):
            return None
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
            self._count_scoped("templates", self._templates.get(entry.uri_template), entry)
            self._templates[entry.uri_template] = entry
        else:
            self._count_scoped("resources", self._resources.get(entry.uri), entry)
            self._resources[entry.uri] = entry
        self._changed("resources")
        return entry

    def remove_resource(self, uri: str) -> None:
        """Unregister a resource by URI, or a template by its URI template."""
        if uri in self._resources:
            self._count_scoped("resources", self._resources.pop(uri), None)
        elif uri in self._templates:
            self._count_scoped("templates", self._templates.pop(uri), None)
        else:
            raise KeyError(f"Unknown resource: {uri}")
        self._changed("resources")

    def add_prompt(self, fn: Callable[..., Any] | Prompt, **kw: Any) -> Prompt | None:
        """Register (or replace) a prompt; keywords as for :meth:`prompt` (one that is not
        ``enabled``, or that the server's tag filters drop, is not registered: None)."""
        if not self._admitted(kw):
            return None
        prompt = fn if isinstance(fn, Prompt) else Prompt(fn, **kw)
        self._count_scoped("prompts", self._prompts.get(prompt.name), prompt)
        self._prompts[prompt.name] = prompt
        self._changed("prompts")
        return prompt

    def _admitted(self, kw: dict[str, Any]) -> bool:
        # fastmcp's ``tags`` and ``enabled`` on a resource or prompt (taken out of ``kw``):
        # the tags listed under ``_meta.fastmcp.tags``; not enabled, or outside the server's
        # tag filters, it is neither listed nor readable.
        tags = frozenset(kw.pop("tags", None) or ())
        if not kw.pop("enabled", True):
            return False
        if self.include_tags is not None and not tags & self.include_tags:
            return False
        if self.exclude_tags is not None and tags & self.exclude_tags:
            return False
        if tags:
            kw["meta"] = tagged_meta(kw.get("meta"), tags)
        return True

    def remove_prompt(self, name: str) -> None:
        if name not in self._prompts:
            raise KeyError(f"Unknown prompt: {name}")
        self._count_scoped("prompts", self._prompts.pop(name), None)
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
        for cache in (self._listings, self._list_results):
            for key in [k for k in cache if k[0] in kinds]:
                del cache[key]
        for gated in [k for k in self._gated if k[0] in kinds]:
            del self._gated[gated]
        for hinted in kinds:
            self._hints.pop(hinted, None)
        for listener in self._listeners:
            listener(kind)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            # A sync tool in the pool: the loop that called it announces the change. Any
            # other thread announces with notify_*_changed().
            calling = calling_loop()
            if calling is not None:
                calling.call_soon_threadsafe(self._announce, kind)
            elif self.fanout is None:
                self._subscriptions.list_changed(kind)
            return
        self._announce(kind)

    def _announce(self, kind: Kind) -> None:
        # On the serving loop: the list change to listen streams and sessions (or the fan-out).
        fanout = self.fanout
        if fanout is None:
            self._subscriptions.list_changed(kind)
            if not self.sessions:
                return
        loop = asyncio.get_running_loop()
        if fanout is not None:
            task = loop.create_task(fanout.list_changed(kind))
        else:
            task = loop.create_task(self._notify_sessions_list_changed(kind))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    # -- notifications to every session -------------------------------------------------------

    async def _broadcast(self, message: bytes, sessions: list[Session]) -> None:
        for session in sessions:
            sink = session.outbound
            if sink is NULL_SINK:
                continue
            try:
                await sink.send(message)
            except Exception:
                log.warning("could not notify session %s", session.id, exc_info=True)

    async def notify_list_changed(self, kind: Kind) -> None:
        """Send ``notifications/{kind}/list_changed`` to every initialized live session and
        every ``subscriptions/listen`` stream that asked for it.

        Adding or removing tools, resources or prompts while serving does this by itself."""
        if self.fanout is not None:
            await self.fanout.list_changed(kind)
            return
        self._subscriptions.list_changed(kind)
        await self._notify_sessions_list_changed(kind)

    async def _notify_sessions_list_changed(self, kind: Kind) -> None:
        sessions = [s for s in list(self.sessions) if s.initialized]
        await self._broadcast(encode_notification(_LIST_CHANGED[kind]), sessions)

    async def notify_tools_changed(self) -> None:
        await self.notify_list_changed("tools")

    async def notify_resources_changed(self) -> None:
        await self.notify_list_changed("resources")

    async def notify_prompts_changed(self) -> None:
        await self.notify_list_changed("prompts")

    async def notify_resource_updated(self, uri: str) -> None:
        """Send ``notifications/resources/updated {uri}`` to every live session subscribed to
        ``uri`` (``resources/subscribe``) and every listen stream that names it."""
        if self.fanout is not None:
            await self.fanout.resource_updated(uri)
            return
        self._subscriptions.resource_updated(uri)
        sessions = [s for s in list(self.sessions) if uri in s.subscriptions]
        if sessions:
            message = encode_notification("notifications/resources/updated", {"uri": uri})
            await self._broadcast(message, sessions)


class Fanout(Protocol):
    """Notifications for every session and listen stream of every process serving the
    server (see :attr:`Server.fanout`)."""

    async def list_changed(self, kind: str) -> None: ...

    async def resource_updated(self, uri: str) -> None: ...


def _resource_kw(kw: dict[str, Any]) -> dict[str, Any]:
    allowed = (
        "name",
        "title",
        "description",
        "mime_type",
        "icons",
        "annotations",
        "meta",
        "ttl_ms",
        "cache_scope",
        "scopes",
    )
    unknown = set(kw) - set(allowed)
    if unknown:
        raise TypeError(f"unexpected keyword arguments {sorted(unknown)}")
    return {key: kw.get(key) for key in allowed}


__all__ = ["Server"]
