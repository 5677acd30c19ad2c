"""Tools: registration (schema and validator built once) and the ``tools/call`` path up to
the tool's value; shaping that value per revision is :mod:`jetmcp.protocol.tool_result`'s."""

from __future__ import annotations

import copy
import inspect
import types
import typing
from collections.abc import Awaitable, Callable, Iterable
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any, Literal, Unpack

import pydantic_core
from pydantic import BaseModel, TypeAdapter, ValidationError

from jetmcp import _wire
from jetmcp.core.call import Call, Result
from jetmcp.core.threads import Mode, SyncCall, republish
from jetmcp.protocol.content import TEXT_JSON_COMPACT, is_content_type
from jetmcp.protocol.modern import x_mcp_headers
from jetmcp.protocol.revisions import Revision
from jetmcp.protocol.tool_result import Output, ToolShaping, error_result, validation_message
from jetmcp.server.access import check_scopes
from jetmcp.server.caching import CacheScope
from jetmcp.server.context import Context
from jetmcp.server.options import NOT_SET, NotSet, TaskSupport, ToolKeywords, ToolOptions
from jetmcp.server.schema import (
    _REQUIRED,
    Arguments,
    build_arguments,
    build_output,
    component_name,
    doc_whole,
    plain_dump,
    signature,
    validates_json_alike,
)

if TYPE_CHECKING:
    from jetmcp.server.app import Server

#: The serializer's ``to_json`` keyword arguments with which the extension writes a declared
#: model once (``model_dump_json(by_alias=True)``): that JSON is the structured content, and
#: indented as ``to_json(..., indent=2)`` indents it, the text. The same bytes as the two
#: serializations of ``shape`` (the differential tests of ``test_model_tool_route.py``).
MODEL_JSON: dict[str, Any] = {"by_alias": True}

#: A tool's ``run_in_thread`` as the way its synchronous function runs.
_MODES: dict[bool | None, Mode] = {None: "auto", True: "thread", False: "inline"}


def normalize_object(value: Any, what: str) -> dict[str, Any] | None:
    """A dict from a dict or a pydantic-style object (``model_dump``), camelCase, no Nones."""
    if value is None:
        return None
    if isinstance(value, dict):
        return dict(value)
    dump = getattr(value, "model_dump", None)
    if dump is not None:
        dumped = dump(mode="json", by_alias=True, exclude_none=True)
        if isinstance(dumped, dict):
            return dumped
    raise TypeError(f"{what} must be a dict or a pydantic model, not {type(value).__name__}")


def normalize_icons(icons: Any) -> list[dict[str, Any]] | None:
    if icons is None:
        return None
    out: list[dict[str, Any]] = []
    for icon in icons:
        normalized = normalize_object(icon, "an icon")
        if normalized is not None:
            out.append(normalized)
    return out


def is_async_callable(fn: Any) -> bool:
    while hasattr(fn, "func") and hasattr(fn, "args"):  # functools.partial
        fn = fn.func
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004
    )


class Tool(ToolShaping):
    """A registered tool: what it takes and how it is called; its results and failures are
    shaped by :class:`~jetmcp.protocol.tool_result.ToolShaping`."""

    __slots__ = (
        "annotations",
        "arguments",
        "cache_scope",
        "context_param",
        "data_out",
        "defer_task",
        "description",
        "enabled",
        "fast",
        "fn",
        "icons",
        "input_schema",
        "invoke",
        "is_async",
        "mask_errors",
        "meta",
        "model_out",
        "name",
        "options",
        "output",
        "owners",
        "route",
        "scopes",
        "startable",
        "structured_output",
        "sync",
        "tags",
        "task_support",
        "timeout",
        "title",
        "ttl_ms",
        "watch_ns",
    )

    def __init__(self, fn: Callable[..., Any], **options: Unpack[ToolKeywords]) -> None:
        opts = ToolOptions(**options)
        #: What the tool was registered with (checked).
        self.options = opts
        tool_name = component_name(fn, opts.name, "tool")
        input_schema = opts.input_schema
        structured_output = opts.structured_output
        description = opts.description
        timeout = opts.timeout
        sig = signature(fn)
        exposed = _without(sig, opts.exclude_args, tool_name)
        self.fn = fn
        self.name: str = tool_name
        self.title = opts.title
        self.description: str = description if description is not None else doc_whole(fn) or ""
        self.arguments: Arguments = build_arguments(
            fn, f"{tool_name}Arguments", sig=exposed, allow_var_keyword=input_schema is not None
        )
        #: The published input schema: the one given (kept verbatim), else the signature's.
        self.input_schema: dict[str, Any] = (
            copy.deepcopy(input_schema) if input_schema is not None else self.arguments.schema
        )
        self.task_support: TaskSupport = opts.task_support
        #: 2026-07-28 tasks extension: run in the request (MRTR rounds allowed) until the
        #: function awaits ``ctx.start_task()``, instead of becoming a task at once.
        self.defer_task = opts.defer_task
        #: Caching hints for ``tools/list`` (None: the server's defaults).
        self.ttl_ms = opts.ttl_ms
        self.cache_scope: CacheScope | None = opts.cache_scope
        #: Seconds a call may wait (None: the server's request timeout; ``math.inf``: none).
        self.timeout: float | None = float(timeout) if timeout is not None else None
        self.context_param = self.arguments.context_param
        self.output: Output | None = _output(
            tool_name, sig.return_annotation, structured_output, opts.output_schema
        )
        self.structured_output = structured_output
        self.annotations = normalize_object(opts.annotations, "tool annotations")
        self.icons = normalize_icons(opts.icons)
        self.meta = opts.meta
        #: fastmcp's tags (listed under ``_meta.fastmcp.tags``; the server's
        #: ``include_tags``/``exclude_tags`` filter on them).
        self.tags: frozenset[str] = frozenset(opts.tags or ())
        #: Whether the tool is listed and callable (fastmcp's ``enabled``; see
        #: :meth:`enable`, :meth:`disable`).
        self.enabled = opts.enabled
        #: What to tell when :attr:`enabled` changes (the servers that hold the tool).
        self.owners: list[Callable[[Tool], None]] = []
        declared_async = is_async_callable(fn)
        #: How a synchronous function is called (the thread pool, or inline once measured
        #: fast: :mod:`jetmcp.core.threads`); None for an ``async`` one.
        # One that takes a Context runs inline unless told: its Context works on the event
        # loop (a thread has none).
        run_in_thread = opts.run_in_thread
        if run_in_thread is None and self.context_param is not None:
            run_in_thread = False
        self.sync: SyncCall | None = (
            None
            if declared_async
            else SyncCall(fn, tool_name, _MODES[run_in_thread], self._switched)
        )
        #: What a call calls: the function itself, or its :attr:`sync` way now.
        self.invoke: Callable[..., Any] = fn if self.sync is None else self.sync.current
        #: Nanoseconds over which a call of :attr:`invoke` demotes the promoted tool (see
        #: :attr:`SyncCall.watch_ns`); None: calls are not timed.
        self.watch_ns: int | None = None if self.sync is None else self.sync.watch_ns
        #: Whether a call gives back an awaitable (an ``async`` function, or a synchronous
        #: one run in the pool: see :meth:`_switched`).
        self.is_async = declared_async
        #: The declared return model, when an instance of exactly it is shaped as the
        #: general path would without its checks (see :func:`_plain_model`).
        self.model_out = _plain_model(self.output, sig.return_annotation)
        #: How the extension writes a value of exactly ``dict``, ``list`` or None (see
        #: :func:`_data_out`).
        self.data_out = _data_out(self.output, sig.return_annotation, structured_output)
        #: The OAuth scopes a principal needs to see and call it (see :mod:`.access`).
        self.scopes = check_scopes(opts.scopes)
        #: Whether unexpected exceptions answer "Error executing tool NAME" only (the
        #: server sets it from its ``mask_error_details``).
        self.mask_errors = False
        #: Whether :meth:`start` is all :meth:`call` does before awaiting (False for a
        #: subclass that calls the tool its own way, as the SDK adapter's tools do): the
        #: dispatcher may then start a planned call itself.
        self.startable = type(self).call is Tool.call
        #: Whether the fast twins of the general path may be taken (the server's
        #: ``fast_paths``): plain arguments and primitive results without pydantic.
        self.fast = True
        #: How the extension calls this tool by itself (see :meth:`_route`); None when the
        #: Python path must.
        self.route: _wire.ToolRoute | None = self._route()

    def enable(self) -> None:
        """List and serve the tool again (fastmcp 2.x's ``tool.enable()``); the servers
        holding it tell their clients the list changed."""
        self._toggle(True)

    def disable(self) -> None:
        """Take the tool out of listings and calls (fastmcp 2.x's ``tool.disable()``): a
        call of it is answered as one of an unknown tool."""
        self._toggle(False)

    def _toggle(self, enabled: bool) -> None:
        if self.enabled is enabled:
            return
        self.enabled = enabled
        for owner in list(self.owners):
            owner(self)

    def _switched(self) -> None:
        """A synchronous tool was promoted or demoted: calls, and the extension's route of
        it in every served route table that holds it, take its new way from now on."""
        sync = self.sync
        assert sync is not None
        self.invoke = sync.current
        self.watch_ns = sync.watch_ns
        self.is_async = not sync.inline_now
        old = self.route
        self.route = self._route()
        republish(self.name, old, self.route)

    def _route(self) -> _wire.ToolRoute | None:
        """A route when a call needs nothing but the function (and a Context, which the
        dispatcher makes): plain ``str``/``int``/``float``/``bool`` parameters (no
        ``**kwargs``), and runnable in place at every revision (not a task-only tool). The
        extension then reads the arguments, calls the function and writes a primitive
        result itself, handing everything else back to :meth:`shape` and :meth:`failure`;
        for an ``async`` function what it hands back is the coroutine, which the dispatcher
        awaits and these shape."""
        if self.task_support == "required":
            return None
        # At 2026-07-28 a tool that may run as a task is the server's call (the client's
        # capabilities decide), and ``x-mcp-header`` properties are checked against the
        # request's headers: Python serves such calls there.
        modern = self.task_support == "forbidden" and not x_mcp_headers(self.input_schema)
        plain = self.arguments.plain
        output = self.output
        structured = output is not None and self.structured_output is not False
        if plain is None and self._validates_json():
            # The extension reads the arguments with the model's validate_json (what that
            # refuses, the general path answers), calls the function and writes a value of
            # exactly the declared model as shape() does.
            model_out = self.model_out
            # Parameters that are each a model or plain: each model argument read by its own
            # model, the plain ones by the extension (no model of the whole arguments).
            mixed = self.arguments.mixed
            return _wire.ToolRoute(
                self,
                self.invoke,
                [] if mixed is None else list(mixed),
                _REQUIRED,
                [],
                structured,
                modern=modern,
                context=self.context_param,
                step=self.is_async and self.timeout is None,
                validate=self.arguments.model.__pydantic_validator__.validate_json,
                models=[]
                if mixed is None
                else [
                    tp.__pydantic_validator__.validate_json
                    if isinstance(tp, type) and issubclass(tp, BaseModel)
                    else None
                    for _, tp, _, _ in mixed
                ],
                fields=[] if mixed is not None else list(self.arguments.names),
                model_out=None
                if model_out is None
                else (
                    model_out,
                    model_out.__pydantic_serializer__.to_json,
                    MODEL_JSON,
                    plain_dump(model_out),
                ),
                data_out=self._data_route(),
                **self._watch(),
            )
        if plain is None or self.arguments.var_keyword:
            # Python reads the arguments and calls the tool (Tool.call); the extension
            # plans single calls of it, sparing them the general path's steps.
            return _wire.ToolRoute(
                self, self.invoke, [], _REQUIRED, [], False, False, modern, None, True
            )
        if output is None:
            fast: list[type] = [int, str, bool, float]
        else:
            fast = [output.fast_type] if output.fast_type in (int, str, bool, float) else []
        return _wire.ToolRoute(
            self,
            self.invoke,
            list(plain),
            _REQUIRED,
            fast,
            structured,
            _positional(self.fn, plain),
            modern,
            self.context_param,
            step=self.is_async and self.timeout is None,
            data_out=self._data_route(),
            **self._watch(),
        )

    def _watch(self) -> dict[str, Any]:
        """The route's ``slow_ns`` and ``on_slow`` for a promoted tool (the extension times
        its calls), else nothing."""
        if self.watch_ns is None or self.sync is None:
            return {}
        return {"slow_ns": self.watch_ns, "on_slow": self.sync.slow_ns}

    def _data_route(self) -> _wire.DataOut | None:
        """The route's ``data_out``, when this class shapes the results."""
        return self.data_out if self._shapes_itself() else None

    def _shapes_itself(self) -> bool:
        """Whether results and failures are shaped by this class's :meth:`shape` and
        :meth:`failure` (a subclass may shape its own way, which the extension must not
        write for it)."""
        return type(self).shape is Tool.shape and type(self).failure is Tool.failure

    def _validates_json(self) -> bool:
        """Whether the extension may validate this tool's arguments with the model's
        ``validate_json`` over their bytes (:func:`validates_json_alike`): a tool called as
        :meth:`call` calls it, shaped by this class's :meth:`shape`, with no ``**kwargs``
        and no renamed parameter (a Context parameter is passed by the dispatcher)."""
        arguments = self.arguments
        return (
            self.startable
            and self._shapes_itself()
            and not arguments.var_keyword
            and not arguments.renames
            and validates_json_alike(arguments.model)
        )

    @property
    def output_schema(self) -> dict[str, Any] | None:
        return self.output.schema if self.output is not None else None

    def listing(self, revision: Revision) -> dict[str, Any]:
        """This tool's entry in ``tools/list``, with the fields ``revision`` knows."""
        entry: dict[str, Any] = {"name": self.name}
        if revision.titles and self.title is not None:
            entry["title"] = self.title
        entry["description"] = self.description
        entry["inputSchema"] = self.input_schema
        if revision.structured_output and self.output is not None:
            entry["outputSchema"] = self.output.schema
        if revision.icons and self.icons:
            entry["icons"] = self.icons
        if revision.annotations:
            annotations = self.annotations
            if self.title is not None and not revision.titles:
                # Before top-level titles (2025-03-26) the title lives in the annotations.
                annotations = {"title": self.title, **(annotations or {})}
            if annotations:
                entry["annotations"] = annotations
        if revision.tasks and self.task_support != "forbidden":
            entry["execution"] = {"taskSupport": self.task_support}
        # ``_meta`` on definitions arrived with titles (2025-06-18).
        if revision.definition_meta:
            meta = tagged_meta(self.meta, self.tags)
            if meta:
                entry["_meta"] = meta
        return entry

    def call(self, arguments: dict[str, Any], call: Call, server: Server) -> Result:
        """Run the tool for a ``tools/call`` and shape its result for ``call.revision``.

        A synchronous tool is answered at once (the dispatcher then needs no task for it); an
        async one gives back a coroutine. Invalid arguments and exceptions are results with
        ``isError: true``; an ``McpError`` raised by the tool is a JSON-RPC error instead.
        """
        started = self.start(arguments, call, server, call.revision)
        if type(started) is dict:
            return started
        return self._shaped(started, call.revision)  # type: ignore[arg-type]

    def start(
        self, arguments: dict[str, Any], call: Call | None, server: Server, revision: Revision
    ) -> dict[str, Any] | Awaitable[Any]:
        """What :meth:`call` does up to awaiting: the shaped result of a synchronous tool
        (or of invalid arguments, or of an exception raised at once), else what the async
        function gave back, still to be awaited and its value shaped (:meth:`shape`, or
        :meth:`failure` for what it raises): the dispatcher awaits that itself. ``call``
        (at ``revision``) is needed only by a tool that takes a Context."""
        try:
            kwargs = self.arguments.validate(arguments, self.fast)
        except ValidationError as exc:
            return error_result(
                f"Invalid arguments for tool {self.name}: {validation_message(exc)}"
            )
        if self.context_param is not None:
            assert call is not None, "a tool that takes a Context is started with its Call"
            kwargs[self.context_param] = Context(call, server)
        watch = self.watch_ns
        if watch is None:
            try:
                value = self.invoke(**kwargs)
            except Exception as exc:
                return self.failure(exc, revision)
        else:
            # A promoted synchronous tool, timed here as the extension times it.
            began = perf_counter_ns()
            try:
                value = self.invoke(**kwargs)
            except BaseException as exc:
                took = perf_counter_ns() - began
                if took > watch:
                    self._slow(took)
                if not isinstance(exc, Exception):
                    raise
                return self.failure(exc, revision)
            took = perf_counter_ns() - began
            if took > watch:
                self._slow(took)
        if self.is_async:
            started: Awaitable[Any] = value
            return started
        return self.shape(value, revision)

    def _slow(self, took_ns: int) -> None:
        if self.sync is not None:
            self.sync.slow_ns(took_ns)

    async def _shaped(self, started: Awaitable[Any], revision: Revision) -> dict[str, Any]:
        try:
            value = await started
        except Exception as exc:
            return self.failure(exc, revision)
        return self.shape(value, revision)


#: The key fastmcp's client reads in an output schema: the structured content is
#: ``{"result": value}`` and ``.data`` is the value.
WRAP_MARK = "x-fastmcp-wrap-result"


def tagged_meta(meta: dict[str, Any] | None, tags: frozenset[str]) -> dict[str, Any] | None:
    """A component's listed ``_meta``: its own, with its tags (if any) under
    ``fastmcp.tags``, sorted, where fastmcp 3.x/4.x lists them."""
    if not tags:
        return meta
    own = dict(meta or {})
    upstream = own.get("fastmcp")
    own["fastmcp"] = {**(upstream if isinstance(upstream, dict) else {}), "tags": sorted(tags)}
    return own


def _without(
    sig: inspect.Signature, excluded: Iterable[str] | None, tool_name: str
) -> inspect.Signature:
    """``sig`` without the parameters ``exclude_args`` names (fastmcp's): each must exist
    and have a default, which every call then gets."""
    if not excluded:
        return sig
    names = set(excluded)
    params = sig.parameters
    for name in sorted(names):
        param = params.get(name)
        if param is None:
            raise ValueError(f"{tool_name}: exclude_args names {name!r}, not a parameter")
        if param.default is inspect.Parameter.empty:
            raise ValueError(
                f"{tool_name}: parameter {name!r} in exclude_args must have a default value"
            )
    return sig.replace(parameters=[p for n, p in params.items() if n not in names])


def _output(
    tool_name: str,
    annotation: Any,
    structured_output: bool | None,
    given: dict[str, Any] | NotSet | None,
) -> Output | None:
    """The tool's declared output: from the return annotation (a wrapped one marked as
    fastmcp marks it, :data:`WRAP_MARK`), none (``output_schema=None``), or the schema
    given, published verbatim (structured content: the value as JSON, under ``result``
    when the schema carries the mark)."""
    if given is None:
        return None
    if given is NOT_SET:
        output = build_output(tool_name, annotation, structured_output)
        if output is not None and output.wrap:
            output.schema = {**output.schema, WRAP_MARK: True}
        return output
    return Output(copy.deepcopy(given), given.get(WRAP_MARK) is True, _ANY, None)


_ANY: TypeAdapter[Any] = TypeAdapter(Any)


def _plain_model(output: Output | None, annotation: Any) -> type[BaseModel] | None:
    """The return annotation when it is a pydantic model that ``Tool.shape`` may write
    directly: structured output from it unwrapped, instances never revalidated, ``model_dump``
    BaseModel's own (its serializer is called as that does), and none of the kinds the
    general path treats apart (content, the SDK's and fastmcp's results)."""
    if output is None or output.wrap or not isinstance(annotation, type):
        return None
    if not issubclass(annotation, BaseModel) or issubclass(annotation, str):
        return None
    if annotation.model_config.get("revalidate_instances", "never") != "never":
        return None
    if annotation.__module__.startswith(("mcp", "fastmcp")) or is_content_type(annotation):
        return None
    if {"ToolResult", "CallToolResult"} & {c.__name__ for c in annotation.__mro__}:
        return None
    if annotation.model_dump is not BaseModel.model_dump:
        return None  # the general path calls the class's own model_dump
    return annotation


#: JSON's own kinds, and ``Any``: validating them runs nothing of the user's.
_PLAIN_DATA: frozenset[Any] = frozenset({Any, str, int, float, bool, None, type(None)})
_REQUIRED_MARKS = {typing.Required, typing.NotRequired}


def _plain_data(tp: Any) -> bool:
    """Whether values of ``tp`` validate without any code of the user's: JSON's own kinds,
    ``Any``, and lists, ``str``-keyed dicts, unions, literals and TypedDicts of them (no
    model, dataclass, enum, ``Annotated`` metadata or type with a schema of its own)."""
    if tp in _PLAIN_DATA or tp is list or tp is dict:
        return True
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is list:
        return all(_plain_data(a) for a in args)
    if origin is dict:
        return args[0] is str and _plain_data(args[1])
    if origin is typing.Union or origin is types.UnionType:
        return all(_plain_data(a) for a in args)
    if origin is Literal:
        return all(type(a) in (str, int, bool) or a is None for a in args)
    if origin in _REQUIRED_MARKS:
        return _plain_data(args[0])
    if typing.is_typeddict(tp):
        try:
            hints = typing.get_type_hints(tp, include_extras=True)
        except Exception:  # a name only pydantic could resolve: Python shapes it
            return False
        return all(_plain_data(h) for h in hints.values())
    return False


def _data_out(
    output: Output | None, annotation: Any, structured_output: bool | None
) -> _wire.DataOut | None:
    """How the extension writes a tool's return value of exactly ``dict``, ``list`` or None
    holding plain JSON data, as :meth:`Tool.shape` does (``ToolRoute(data_out=...)``): the
    content blocks of :func:`content_blocks` (a dict's or float's text being ``to_json``'s
    compact JSON indented as ``indent=2`` indents it); with no declared output a dict's
    structured content is the value as plain JSON (``to_jsonable``: that same JSON), with
    one it is the declared output's dump of what its validator makes of the value (of
    ``{"result": value}`` for a wrapped one). None (Python shapes it) for a declared output
    whose type is not plain data (:func:`_plain_data`), or a bare one that is no ``str``-keyed
    dict or TypedDict."""
    if output is None:
        return (pydantic_core.to_json, TEXT_JSON_COMPACT, structured_output is not False, None)
    if output.wrap or annotation is dict or typing.get_origin(annotation) is dict:
        plain = _plain_data(annotation)
    else:
        plain = typing.is_typeddict(annotation) and _plain_data(annotation)
    if not plain:
        return None
    adapter = output.adapter
    check = (adapter.validator.validate_python, adapter.serializer.to_json, MODEL_JSON, output.wrap)
    return (pydantic_core.to_json, TEXT_JSON_COMPACT, True, check)


def _positional(fn: Callable[..., Any], plain: tuple[tuple[str, type, Any, bool], ...]) -> bool:
    """Whether ``fn(*values)`` binds exactly as ``fn(**values)`` for ``plain``'s parameters:
    a plain function (not a wrapper that could treat the two differently) whose parameters
    are exactly these, in this order, each positional-or-keyword."""
    if type(fn) is not types.FunctionType or hasattr(fn, "__wrapped__"):
        return False
    params = list(inspect.signature(fn).parameters.values())
    return [p.name for p in params] == [entry[0] for entry in plain] and all(
        p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params
    )


__all__ = [
    "WRAP_MARK",
    "Tool",
    "is_async_callable",
    "normalize_icons",
    "normalize_object",
    "tagged_meta",
]
