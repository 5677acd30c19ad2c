"""The JSON-RPC wire core of jetmcp, written in Rust.

It reads request bytes without re-serializing them: every message's ``id`` is kept as its
raw lexeme (the exact input bytes) and spliced back into the reply byte for byte.
"""

import asyncio
from collections.abc import Callable, Coroutine, Iterable, Sequence
from typing import Any, Final, TypeVar, final

_T = TypeVar("_T")

# Frame kinds: what a whole body (or stdio line) turned out to be.
FRAME_SINGLE: Final[int]  # one JSON object (or one non-array value, which is an invalid entry)
FRAME_BATCH: Final[int]  # a non-empty JSON array
FRAME_PARSE_ERROR: Final[int]  # not UTF-8, not JSON, or over a limit: answer -32700
FRAME_EMPTY_BATCH: Final[int]  # ``[]``: answer a single -32600
FRAME_BATCH_TOO_LARGE: Final[int]  # an array with more entries than ``max_batch``: single -32600

# Entry kinds.
REQUEST: Final[int]  # has a method and a valid id
NOTIFICATION: Final[int]  # has a method and no id member
RESPONSE: Final[int]  # has ``result`` or ``error`` and no method
INVALID: Final[int]  # anything else: answer -32600 for this entry alone

# Id classes.
ID_ABSENT: Final[int]
ID_NULL: Final[int]
ID_STRING: Final[int]
ID_INT: Final[int]  # an integer lexeme with |n| <= 2**53 - 1
ID_UNSAFE_NUMBER: Final[int]  # a fraction, an exponent, or an integer outside the safe range
ID_OTHER: Final[int]  # an object, array or boolean

DEFAULT_MAX_DEPTH: Final[int]
DEFAULT_MAX_BATCH: Final[int]

BUILD: Final[str]
"""The cargo profile this extension was built with, e.g. ``"release (opt-level 3)"`` or
``"ci (opt-level 1, debug assertions)"``: benchmarks record it."""

CONTEXT_SLOTS: Final[tuple[str, ...]]
"""The slots of ``jetmcp.server.context.Context`` that :meth:`Plans.run_context` sets, in
order, on a Context it makes as ``object.__new__(Context)`` does (no ``__init__`` runs):
``_made`` (None), ``_plan`` (the plans, the frame, the exchange, the revision), ``_server``
and ``_state`` (None). ``tests/wire/test_context_slots.py`` holds them to ``Context.__slots__``."""

@final
class Entry:
    """One message of a frame. Built by :func:`decode`; never constructed by hand."""

    kind: int
    """REQUEST, NOTIFICATION, RESPONSE or INVALID."""
    method: str | None
    """The ``method`` string, when it is one."""
    raw_id: bytes | None
    """The id exactly as written (a string keeps its quotes and escapes), or None when the id
    is absent or cannot be trusted; an error reply then carries ``null``."""
    id_class: int
    """One of the ID_* constants."""
    reason: str | None
    """Why the entry is INVALID (a short message for the -32600 error), else None."""
    has_params: bool
    """Whether a ``params`` member is present."""
    is_error: bool
    """For a RESPONSE: whether it carries ``error`` rather than ``result``."""

    def params(self) -> Any:
        """``params`` built into Python objects from its span (None when absent), with the same
        grammar ``decode`` checked, so it does not fail (but for nesting beyond 200 levels, a
        ValueError, reachable only with ``max_depth`` raised past that). Built anew each call."""
    def result(self) -> Any:
        """For a RESPONSE: ``result`` (or ``error`` when ``is_error``) as Python objects; None
        for other kinds."""
    def raw(self) -> bytes:
        """The entry's own bytes, as they stood in the input."""
    def arguments_raw(self) -> bytes | None:
        """For a ``tools/call`` request: the bytes of ``params.arguments`` exactly as they
        stand in the body (a value of any type), for ``TypeAdapter.validate_json`` without
        building a dict. None for another kind or method, and when ``params`` is not an
        object, has a key written with escapes, or holds ``arguments`` other than once."""

@final
class Frame:
    """What :func:`decode` found in one body."""

    kind: int
    """One of the FRAME_* constants."""
    entries: list[Entry]
    """The messages: one for FRAME_SINGLE, each array element for FRAME_BATCH, else empty."""
    error: str | None
    """For FRAME_PARSE_ERROR and FRAME_BATCH_TOO_LARGE: what went wrong."""
    initialize: bool
    """Whether the frame is one ``initialize`` request (told without building ``entries``)."""

def eager_task(loop: Any, coro: Coroutine[Any, Any, _T]) -> asyncio.Task[_T]:
    """A task of ``coro`` on ``loop`` whose first step has run, in this call, as Python
    3.12's eager tasks run: a real ``asyncio.Task``, made as ``loop.create_task`` makes it
    (named ``jetmcp-request``), whose scheduled first step is taken at once instead, in the
    task's context (``current_task()``, ``asyncio.timeout``, ``all_tasks()`` as in any
    task's step). Called from a callback of ``loop`` (no task running); with a task running,
    a task factory set, or a loop that takes no attributes, an ordinary ``create_task``.
    What the step raises that is no ``Exception`` (KeyboardInterrupt, SystemExit) propagates,
    as it leaves a task's step on the loop."""

def _capture_step(callback: Any, *args: Any, context: Any = None) -> None:
    """The loop's ``call_soon`` while :func:`eager_task` makes a task (internal)."""

def _register_task(task: Any) -> None:
    """asyncio's set of all tasks' ``add`` while :func:`eager_task` makes a task
    (internal)."""

def decode(body: bytes, max_depth: int = ..., max_batch: int = ...) -> Frame:
    """Frame one JSON-RPC body. Never raises for bad input: bad input is described by the
    frame and its entries. ``max_depth`` bounds nesting (deeper is a parse error; the batch
    array is one level, an entry object another); ``max_batch`` bounds the entries of an
    array. The whole body is validated before any entry is returned (a syntax error anywhere,
    even past ``max_batch``, is FRAME_PARSE_ERROR). Raises TypeError only for a non-``bytes``
    body. Bodies of 64 KiB and more are scanned with the GIL released."""

#: ``ToolRoute``'s ``model_out``: the model class, then the function that writes an instance
#: as compact JSON bytes, with its keyword arguments, and when that serializer writes plain
#: fields only (``jetmcp.server.schema.plain_dump``), those fields in order: (attribute,
#: serialization alias, ``"float"``/``"int"``/``"str"``/``"bool"``, whether None is allowed);
#: an instance holding exactly those is written by the extension, byte for byte as the
#: serializer writes it.
_ModelOut = tuple[type, Callable[..., Any], dict[str, Any], list[tuple[str, str, str, bool]] | None]
#: ``ToolRoute``'s ``data_out``: (the text's JSON writer and its keywords, whether a result
#: carries structured content, and for a declared output (its validator, the JSON writer of
#: what that gives, its keywords, whether the value is validated as ``{"result": value}``)
#: or None).
DataOut = tuple[
    Callable[..., Any],
    dict[str, Any],
    bool,
    tuple[Callable[[Any], Any], Callable[..., Any], dict[str, Any], bool] | None,
]

@final
class RawJSON:
    """Bytes that are already JSON; the encoder writes them verbatim."""

    def __init__(self, data: bytes) -> None: ...
    @property
    def data(self) -> bytes: ...

def dumps(obj: Any) -> bytes:
    """Serialize dict/list/tuple/str/int/float/bool/None/RawJSON to compact JSON (UTF-8, no
    ASCII escaping). Non-finite floats become null. Raises TypeError for anything else
    (including non-str dict keys) and ValueError for nesting deeper than 255 (so for cycles)
    and for a str with a lone surrogate (UnicodeEncodeError, a ValueError). Subclasses of
    str/int/float/dict/list/tuple (enums, named tuples) are written as their base type."""

def encode_result(raw_id: bytes, result: Any, server_info: bytes | None = None) -> bytes:
    """``{"jsonrpc":"2.0","id":<raw_id>,"result":<result>}`` with ``raw_id`` spliced in as is.

    With ``server_info`` (the JSON text of the server's ``serverInfo``, as a 2026-07-28
    :class:`Shape` holds it) the result, a dict, is completed exactly as
    ``Dispatcher._complete`` completes it, without copying it: its members in order, its
    ``_meta`` (when a dict) holding ``io.modelcontextprotocol/serverInfo`` first (its own such
    member, if any, wins) and replaced when not a dict, then ``"resultType":"complete"`` unless
    it has a ``resultType``, then ``_meta`` unless it has one. TypeError when it is not a dict.

    Every ``encode_*`` taking a ``raw_id`` runs a cheap sanity check on it (a quoted string,
    a number lexeme, or ``null``) and raises ValueError otherwise; pass ``Entry.raw_id``."""

def encode_error(raw_id: bytes | None, code: int, message: str, data: Any = ...) -> bytes:
    """A JSON-RPC error reply; ``raw_id`` None writes ``"id":null``; ``data`` is omitted when
    not given."""

def encode_request(raw_id: bytes, method: str, params: Any = ...) -> bytes:
    """A JSON-RPC request with ``raw_id`` spliced in; ``params`` omitted when not given."""

def encode_notification(method: str, params: Any = ...) -> bytes:
    """A JSON-RPC notification; ``params`` omitted when not given."""

def encode_batch(replies: list[bytes]) -> bytes:
    """Join encoded replies into one JSON array (a tuple works too; ``[]`` for none). The
    replies are not re-validated."""

# Calls of plain tools answered inside the extension (rust/src/py_route.rs, py_plan.rs):
# Routes.plan -> Plans -> run. The extension calls the tool functions and nothing else of
# Python: what it does not shape itself comes back as an Outcome.

@final
class ToolRoute:
    """How the extension calls one tool: a function whose parameters are all
    ``str``/``int``/``float``/``bool`` (what an ``async`` one returns is handed back), and
    maybe a context object its caller makes."""

    def __init__(
        self,
        tool: Any,
        func: Callable[..., Any],
        params: list[tuple[str, type, Any, bool]],
        required: Any,
        fast_types: list[type],
        structured: bool,
        positional: bool = False,
        modern: bool = False,
        context: str | None = None,
        python_call: bool = False,
        step: bool = False,
        validate: Callable[[bytes], Any] | None = None,
        fields: list[str] = ...,
        model_out: _ModelOut | None = None,
        data_out: DataOut | None = None,
        slow_ns: int = 0,
        on_slow: Callable[[int], object] | None = None,
        models: list[Callable[[bytes], Any] | None] = ...,
    ) -> None:
        """``params``: (name, type, default, whether None is allowed) in signature order,
        ``required`` standing for "no default"; ``fast_types``: the return types (of int,
        str, bool) written without Python; ``structured``: whether such a result carries
        ``structuredContent``; ``positional``: pass the arguments by position (only where
        that binds the same); ``modern``: calls at 2026-07-28 may be planned (not for a tool
        that may run as a task there, nor one whose input schema has ``x-mcp-header``
        properties); ``context``: the keyword the function takes a context object by (a
        call is then planned for a single message only, and runs with the context its
        caller gives :meth:`Plans.run`); ``python_call``: the extension only plans the
        calls (name, ``_meta`` and headers checked, ``arguments`` an object) and Python
        reads the arguments and calls the tool (``params`` must be empty); ``step``: the
        coroutine an ``async`` function gives back may take its first step in the extension
        when the caller allows it (``Plans.run(step=True)``; not for a tool whose awaiting
        a timeout wraps); ``validate``: the tool's parameters are the ``fields`` of a
        pydantic model (in signature order) and this, its ``validate_json``, reads them from
        the ``arguments`` bytes when the call runs (``params`` must be empty, not
        ``python_call``; a context is passed as for any route): a call whose arguments it
        refuses runs nothing and gives None, for the general path to answer; with
        ``models`` (one per parameter of ``params``: a model parameter's own model's
        ``validate_json``, its type in ``params`` the model; None for a plain one), the
        arguments are read parameter by parameter instead, with no model of the whole: each
        model argument's bytes by its model (in signature order), each plain one as a plain
        route reads it; a repeated or escaped key, a plain argument not exactly of its type,
        a refused or missing one run nothing (None, the general path answers);
        ``model_out``: (the declared return model, a function that writes an instance as
        compact JSON bytes, and its keywords): a value of exactly that class is written
        once, as ``{"content":[{"type":"text","text":<the JSON indented two spaces as
        pydantic's indent=2 indents it>}],"structuredContent":<the JSON>,"isError":false}``
        (the structured content only where ``structured`` and the revision allow), as
        Python's shaping writes it; when the function raises, or writes ``Infinity`` or
        ``NaN``, the value goes back to Python; ``data_out``: how a value of exactly
        ``dict``, ``list`` or None holding plain JSON data (exactly str, int within 64 bits,
        float, bool, None, lists and str-keyed dicts) is written: (``text``, its keywords,
        ``structured``, (``check``, ``json``, its keywords, ``wrap``) or None): the content
        blocks are Python's ``content_blocks`` of the value, a dict's or float's text being
        the compact JSON ``text`` writes indented as pydantic's indent=2 indents it; where the
        revision has structured content and ``structured``, the structured content is a
        dict's JSON when no ``check`` is given (none for a list or None), else the JSON
        ``json`` writes of what ``check`` returns for the value (for ``{"result": value}``
        when ``wrap``); when any of them raises, a text holds ``Infinity`` or ``NaN``, or a
        string a lone surrogate, the value goes back to Python; ``on_slow``: a call of
        ``func`` (returning or raising) is timed with the monotonic clock, and one that took
        over ``slow_ns`` nanoseconds is reported as ``on_slow(nanoseconds)`` once done (what
        that raises is written as unraisable; a promoted synchronous tool's demotion)."""
    @property
    def names(self) -> list[str]: ...
    @property
    def slow_ns(self) -> int | None:
        """The nanoseconds over which a call is reported to ``on_slow``; None: not timed."""
    @property
    def context(self) -> str | None: ...
    @property
    def python_call(self) -> bool: ...
    @property
    def positional(self) -> bool: ...
    @property
    def modern(self) -> bool: ...
    @property
    def validates(self) -> bool:
        """Whether the arguments are read by the model's ``validate_json`` (``validate``)."""
    @property
    def tool(self) -> Any:
        """The ``tool`` given to the constructor."""

class Routes:
    """The tools the extension may call, by name (the server keeps it up to date)."""

    def __init__(self) -> None: ...
    def __setitem__(self, name: str, route: ToolRoute) -> None: ...
    def __getitem__(self, name: str) -> ToolRoute: ...
    def __delitem__(self, name: str) -> None: ...
    def __contains__(self, name: str) -> bool: ...
    def __len__(self) -> int: ...
    def pop(self, name: str) -> ToolRoute | None:
        """Remove the route of ``name``, if any; the route, or None."""
    def clear(self) -> None: ...
    def names(self) -> list[str]:
        """The names, sorted."""
    def plan(self, frame: Frame, shape: Shape, headers: Headers | None = None) -> Plans | None:
        """Read and check the ``tools/call`` requests of ``frame`` (FRAME_SINGLE or
        FRAME_BATCH) that a tool here can answer under ``shape``; run nothing. None when no
        entry plans (the usual unplannable message costs this one call).

        An entry plans when it is a request whose ``method`` is written ``"tools/call"``,
        whose ``params`` hold exactly ``name`` (a string without escapes) and ``arguments``
        (an object) and optionally ``_meta`` (an object), keys written without escapes and
        none repeated, naming a tool here whose every argument is exactly of its
        parameter's type (unknown ones ignored, a missing one only where it has a default),
        and:

        * at a legacy shape, ``_meta`` (if any) has keys without escapes and does not name
          ``io.modelcontextprotocol/protocolVersion`` (stdio serves such a request at
          2026-07-28); ``headers`` are ignored;
        * at a 2026-07-28 shape, ``_meta`` passes ``modern.check_meta`` and
          ``modern.check_version``: keys without escapes, the protocol version once, a
          string among ``shape.versions``, the client capabilities once, an object; the
          tool's route is ``modern``; and ``headers`` (when given: HTTP) agree as
          ``modern.check_headers`` finds. An array's entries carry no ``Mcp-Method``,
          ``Mcp-Name`` or ``Mcp-Param-*`` (with one, nothing plans: the transport refuses
          such a batch) and are held to ``MCP-Protocol-Version`` alone.

        Anything else is left to the general path, which produces the exact reply or error.
        A batch is planned as given: refuse the batches a revision does not take first."""
    def answer(
        self,
        frame: Frame,
        shape: Shape,
        headers: Headers | None = None,
        step: bool = False,
        task_loop: Any = None,
        may_step: Callable[[], bool] | None = None,
    ) -> bytes | Outcome | Plans | None:
        """For a FRAME_SINGLE frame: plan its call as :meth:`plan` would and run it at once
        (one call instead of ``plan`` then ``Plans.run(0, step=step)``). The reply, its
        :class:`Outcome`, or None when it does not plan (nothing ran; also for any other
        kind of frame). A call of a tool that takes a context is planned, not run: its
        :class:`Plans`, for the caller to run (:meth:`Plans.run_context`).

        ``task_loop`` (with ``may_step``, both or neither): an ``async`` tool's coroutine
        (of a route that steps) runs as a task on that loop whose first step runs here
        (:func:`eager_task`), when ``may_step()`` is true at that moment; what the task
        returned in that step is written as a synchronous tool's value is, else the outcome
        is ``stepped`` (``running`` when the task did not end in that step, or ended
        cancelled)."""

@final
class Shape:
    """What results look like at one revision; build one per revision and keep it."""

    def __init__(
        self,
        structured: bool,
        server_info: bytes | None = None,
        versions: list[str] = ...,
        context: tuple[Any, type, list[Any]] | None = None,
    ) -> None:
        """``structured``: results carry ``structuredContent`` (``revision.structured_output``).
        ``server_info`` makes a 2026-07-28 shape: the JSON text of the server's
        ``serverInfo`` at that revision (``dumps(server.server_info(revision))``), with which
        finished results are completed exactly as ``Dispatcher._complete`` writes them
        (``"resultType":"complete"`` and ``_meta`` holding it, after the result's own
        members); ``versions`` are the protocol versions a request's ``_meta`` may name.
        ValueError for a ``server_info`` that is not a JSON object, and for ``versions``
        without one.

        ``context``, for a 2026-07-28 shape: ``(server, Context, revisions)``,
        ``revisions`` holding the revision object of each of ``versions``: how
        :meth:`Plans.run_context` makes the Context of a call it runs, as
        ``object.__new__(Context)`` does (no ``__init__`` runs), setting its slots
        (:data:`CONTEXT_SLOTS`)."""
    @property
    def structured(self) -> bool: ...
    @property
    def modern(self) -> bool:
        """Whether this is a 2026-07-28 shape."""
    @property
    def server_info(self) -> bytes | None: ...
    @property
    def versions(self) -> list[str]: ...

@final
class Headers:
    """The MCP routing headers of one HTTP request at 2026-07-28, as sent (values
    untrimmed): ``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name``, each
    ``Mcp-Param-<Name>`` by its lower-cased ``<Name>``, and the MCP headers that came more
    than once. The one type both the extension and Python's general path read them from."""

    def __init__(
        self,
        protocol_version: str | None = None,
        method: str | None = None,
        name: str | None = None,
        params: dict[str, str] | None = None,
        repeated: Sequence[str] = (),
    ) -> None:
        """Compared with each request as ``modern.check_headers`` does for a tool without
        ``x-mcp-header`` properties (which ignores ``Mcp-Param-*``): a repeated header never
        agrees; the trimmed protocol version must equal ``_meta``'s; ``Mcp-Method`` must be
        ``tools/call`` and ``Mcp-Name`` the tool's name, literally or in canonical
        ``=?base64?...?=`` form. A value Python might read otherwise (control or non-ASCII
        characters, a base64 form not written canonically) never agrees: the request is
        then left to Python, which answers it exactly."""
    @staticmethod
    def from_map(headers: Any) -> Headers:
        """The MCP headers of a header map whose names are lower-case and which gives every
        value of a name (``keys()``, ``get_all(name)``: Granian's, or the ASGI adapter's);
        the last value of a repeated name counts, a name with no value is as if absent."""
    @staticmethod
    def from_items(items: Iterable[tuple[str, str]]) -> Headers:
        """The MCP headers of ``(name, value)`` pairs, names in any case."""
    @property
    def protocol_version(self) -> str | None: ...
    @property
    def method(self) -> str | None: ...
    @property
    def name(self) -> str | None: ...
    @property
    def params(self) -> dict[str, str]:
        """Each ``Mcp-Param-<Name>`` value by lower-cased ``<Name>`` (a new dict)."""
    @property
    def repeated(self) -> tuple[str, ...]:
        """The MCP headers sent more than once, as spelled."""
    @property
    def routes(self) -> bool:
        """Whether a header naming one request (``Mcp-Method``, ``Mcp-Name``,
        ``Mcp-Param-*``) is present."""

@final
class Gate:
    """The HTTP transport's verdicts on the header values of usual POSTs
    (``McpHttpApp._usual``), learned from Python and given again in one call over the
    scope. Only values Python judged first are known; the checks that vary per request (one
    Host value, ``:authority`` equal to it, no Origin, a plain-digit ``Content-Length``
    within ``max_body``) are made on every call. Keeps at most ``capacity`` verdicts, and
    forgets them all when full."""

    def __init__(self, max_body: int, capacity: int = 256) -> None: ...
    def admit(self, scope: Any) -> tuple[int, Any, Headers | None, Any] | None:
        """``(accept, revision, routing, headers)`` as ``_usual`` found them for the same
        header values (``routing`` read now from this scope when the revision is None, a
        2026-07-28 request; ``headers``: ``scope.headers``, read once), or None: not
        learned, or not usual. Every header is read from one ``headers.items()`` call, its
        first readable value as ``jetmcp.transports._http.first`` reads it (``Origin``
        also with ``in``: one Granian cannot read is still an Origin)."""
    def learn(
        self,
        host: str,
        content_type: str | None,
        accept: str | None,
        version: str,
        flags: int,
        revision: Any,
    ) -> None:
        """Remember that a POST with these values is usual, with accept ``flags`` and
        ``revision`` (None: 2026-07-28)."""
    def __len__(self) -> int: ...

@final
class Outcome:
    """A planned call the extension does not answer itself, for Python to shape exactly as
    the general path does (``tool.shape`` / ``tool.failure``, completion, encoding)."""

    @property
    def index(self) -> int:
        """The entry's index in the frame."""
    @property
    def tool(self) -> Any:
        """The ``tool`` given to the entry's ``ToolRoute``."""
    @property
    def raw_id(self) -> bytes:
        """The request's id lexeme."""
    @property
    def value(self) -> Any:
        """The return value (not an int/str/bool the tool's output allows), or the
        exception instance when ``failed``."""
    @property
    def failed(self) -> bool:
        """Whether the function raised (an ``Exception``; other BaseExceptions propagate
        out of ``run``)."""
    @property
    def stepped(self) -> bool:
        """Whether an ``async`` function's coroutine took its first step in the extension:
        ``value`` is then what it returned (or raised, ``failed``) unless ``suspended``."""
    @property
    def suspended(self) -> bool:
        """Whether the stepped coroutine (``value``) suspended, on ``yielded``: the rest is
        to be awaited, never stepped again."""
    @property
    def yielded(self) -> Any:
        """What the suspended coroutine yielded (None when it did not suspend)."""
    @property
    def running(self) -> bool:
        """Whether ``value`` is the task running the coroutine (``Routes.answer`` with a
        ``task_loop``): its first step did not end the call, or it ended cancelled; what is
        left is to await the task."""
    def step(self, shape: Shape) -> bytes | Outcome:
        """Take the first step of the coroutine this outcome holds (an ``async`` tool's, not
        stepped yet), as ``Routes.answer(..., step=True)`` takes it; the caller is the task
        that awaits the rest. The reply when the coroutine returned a value the extension
        writes (as a synchronous tool's); else the outcome of the step (``stepped``). Raises
        what the coroutine raised that is no ``Exception``."""

@final
class Plans:
    """The plans :meth:`Routes.plan` made for one frame. Each planned entry runs once, in
    the order asked for; nothing runs otherwise."""

    def __len__(self) -> int:
        """The number of entries in the frame, planned or not."""
    @property
    def complete(self) -> bool:
        """Whether every entry is planned."""
    def planned(self, i: int) -> bool:
        """Whether entry ``i`` is planned and has not run (IndexError past the end)."""
    def route(self, i: int) -> ToolRoute | None:
        """The route entry ``i`` is planned with (None once it ran, or if not planned)."""
    def arguments(self, i: int) -> Any:
        """``params.arguments`` of entry ``i`` as Python objects (None if not planned)."""
    def meta(self, i: int) -> Any:
        """``params._meta`` of entry ``i`` as Python objects (None without one, or if never
        planned); still there while and after the entry runs."""
    def log_level(self, i: int) -> Any:
        """The value of the ``io.modelcontextprotocol/logLevel`` member of entry ``i``'s
        ``_meta`` (the last one, as :meth:`meta`'s dict keeps), read without building the
        rest (None without one, or if never planned); still there while and after it runs."""
    def version(self, i: int) -> Any:
        """The protocol version entry ``i``'s ``_meta`` names, as it decodes (None when it
        names none, or the entry is not planned); at 2026-07-28 one of the shape's."""
    def run(self, i: int, context: Any = None, step: bool = False) -> bytes | Outcome | None:
        """Call entry ``i``'s tool: the finished reply (a primitive result written here,
        completed at a 2026-07-28 shape) or its :class:`Outcome`. ValueError when the entry
        is not planned or already ran. The tools may have changed since planning (a tool
        can add or remove tools): the entry runs if its name still maps to the route it was
        planned with, else it plans again against the tools as they are; when it no longer
        plans, None: nothing ran and ``planned(i)`` is False, so serve it the general way.
        ``step``: an ``async`` function's coroutine (a route with ``step``) takes its first
        step here; what it returns at once is answered as a synchronous function's value,
        and the :class:`Outcome` says whether it ran (``stepped``) and suspended."""
    def run_context(
        self, exchange: Any, step: bool = False
    ) -> bytes | tuple[Any, Any, Any, bool] | None:
        """Run entry 0, planned as a call of a tool that takes a context, with the Context
        the shape's ``context`` says how to make, whose exchange is ``exchange``: what
        ``run(0, context, step)`` does, with no Python between planning and the tool. None
        when entry 0 is no such call (one Python calls itself, or not planned) or the shape
        has no ``context``: nothing ran. Else the reply, or ``(value, context, revision,
        raised)``: what ``run`` gave (None, reply bytes or an :class:`Outcome`), or the
        exception it raised (``raised``: an ``InputRequired``, or anything that is not an
        ``Exception``)."""
    def run_all(self) -> bytes | list[bytes | Outcome | None]:
        """Only when ``complete`` (else ValueError): run every entry in order. The whole
        reply when every entry finished here (a single message's reply, or a batch's
        array), else a list in entry order of each reply's bytes or :class:`Outcome`, for
        Python to shape and join with :func:`encode_batch`. From an entry that no longer
        plans (see :meth:`run`) on, the list holds None: those entries did not run."""

# HTTP/1.1 framing (sans-IO): where an ``Http1Connection`` is, for the caller's timeouts.
HTTP1_IDLE: Final[int]  # between requests: nothing of the next one has come (idle timeout)
HTTP1_HEAD: Final[int]  # part of a request head has come (header timeout)
HTTP1_BODY: Final[int]  # the head is read, the body is not complete (body timeout)
HTTP1_RESPONDING: Final[int]  # a request is out, its response not finished: input is held
HTTP1_CLOSED: Final[int]  # nothing more is read (after a refusal or a closing response)

class Http1Error(ValueError):
    """A peer's bad HTTP/1.1 framing (from :meth:`Http1Connection.feed` and
    :meth:`Http1ClientConnection.feed`). It is final: the connection reads nothing more."""

    status: int | None
    """The status to answer with (400, 413, 431, 501, 505); None: close without an answer
    (an HTTP/2 preface, or any error of a client connection)."""
    reason: str
    """Why, in a few words (also the answer's plain-text body)."""
    response: bytes
    """The whole answer to write before closing (empty when ``status`` is None)."""

@final
class Http1Request:
    """A complete request handed out by :meth:`Http1Connection.feed`: its head as received
    and its body, decoded. Header lookups read the received bytes; no Python object is made
    for a header that is not asked for."""

    @property
    def method(self) -> bytes:
        """The method token as sent (case-sensitive)."""
    @property
    def target(self) -> bytes:
        """The request target as sent (visible ASCII)."""
    @property
    def http_version(self) -> bytes:
        """``b"1.1"`` or ``b"1.0"``."""
    @property
    def keep_alive(self) -> bool:
        """Whether the connection may stay open after the response (HTTP/1.1 unless
        ``Connection: close``; HTTP/1.0 only with ``Connection: keep-alive``)."""
    @property
    def expects_continue(self) -> bool:
        """Whether it sent ``Expect: 100-continue`` (HTTP/1.1, with a body)."""
    @property
    def body(self) -> bytes:
        """The body, decoded from Content-Length or chunked framing (``b""`` for none)."""
    def header(self, name: bytes) -> bytes | None:
        """The first value of header ``name`` (any case), whitespace around it stripped."""
    def header_all(self, name: bytes) -> list[bytes]:
        """Every value of header ``name`` (any case), in the order received."""
    def header_key(self, names: tuple[bytes, ...]) -> bytes:
        """The first value of each header of ``names``, each followed by a NUL byte (a
        0x01 byte in place of an absent header's value): one key, in one call, to look up
        a verdict learned on those values (field values never hold NUL or 0x01)."""
    def lane_key(self, path: bytes, names: tuple[bytes, ...]) -> bytes | None:
        """:meth:`header_key` of a ``POST`` whose target is exactly ``path``, else None."""
    def routing(self) -> Headers:
        """The MCP routing headers, as :meth:`Headers.from_map` reads them from the native
        engine's header map (names lower-cased, unreadable values left out)."""
    def headers(self) -> list[tuple[bytes, bytes]]:
        """Every header line as ``(name, value)``, names as sent, in order."""

@final
class Http1Fields:
    """Response header fields checked once (as :meth:`Http1Connection.respond` checks them)
    and kept as the bytes they are written as: pass it as ``headers`` to a response that
    carries the same fields every time. ValueError for a field that could break the
    framing."""

    def __init__(self, headers: Sequence[tuple[bytes, bytes]]) -> None: ...
    def __bytes__(self) -> bytes:
        """The field lines, each ending in CRLF."""

@final
class Http1Connection:
    """A server's side of one HTTP/1.1 connection, without I/O: received bytes in, complete
    requests out (in order, each once); responses in, bytes to write out.

    One request is out at a time: once :meth:`feed` hands one out, later input is held
    unparsed until its response is written (:meth:`respond`, or :meth:`end_stream`); then
    :meth:`next_request` gives the next pipelined request. Bad framing (RFC 9112) raises
    :class:`Http1Error` once; the connection then reads nothing more. Every limit is a
    keyword argument with a safe default: the longest head line (``max_line``, 8 KiB) and
    head (``max_head``, 32 KiB) and the most header fields (``max_headers``, 100; at most
    256) are answered 431; the largest body (``max_body``, 4 MiB) 413, a declared length
    before any of the body is read; the longest chunk-size line (``max_chunk_line``, 1 KiB)
    400; the longest trailer section (``max_trailers``, 8 KiB) 431; pipelined input held
    while a response is written past ``max_buffer`` (256 KiB) sets :attr:`wants_pause`."""

    def __init__(
        self,
        *,
        max_line: int = ...,
        max_head: int = ...,
        max_headers: int = ...,
        max_body: int = ...,
        max_chunk_line: int = ...,
        max_trailers: int = ...,
        max_buffer: int = ...,
    ) -> None: ...
    def feed(self, data: bytes) -> Http1Request | None:
        """Take received bytes; the next complete request, if one is complete and no
        earlier response is still being written. Raises :class:`Http1Error` on bad framing;
        after it (and after a response that closed the connection) input is dropped."""
    def next_request(self) -> Http1Request | None:
        """The next complete request from input already held, once the previous response
        is written (pipelining)."""
    @property
    def phase(self) -> int:
        """One of the ``HTTP1_*`` phases (which timeout applies now)."""
    @property
    def buffered(self) -> int:
        """Bytes held: unparsed input and the part of a request read so far."""
    @property
    def wants_pause(self) -> bool:
        """Whether to stop reading until the response is written (more than
        ``max_buffer`` bytes of pipelined input are held)."""
    @property
    def closed(self) -> bool:
        """Whether the connection reads nothing more: close the transport once the writes
        are flushed."""
    def take_continue(self) -> bytes | None:
        """``HTTP/1.1 100 Continue`` to write, once, when a request that sent
        ``Expect: 100-continue`` waits for its body; else None."""
    def respond(
        self,
        status: int,
        headers: Http1Fields | Sequence[tuple[bytes, bytes]],
        body: bytes,
        close: bool = False,
    ) -> bytes:
        """The whole response to the outstanding request: status line, ``headers``,
        Content-Length (none for 204 and 304), ``Connection`` when the connection closes
        (``close``, or the request asked) or an HTTP/1.0 one stays open, then ``body`` (not
        for a HEAD request). ValueError for a header that could break the framing (a name
        that is not a token, CR, LF, NUL or another control byte in a value, or a
        Content-Length, Transfer-Encoding or Connection header, which the connection
        writes); RuntimeError when no request is waiting for a response."""
    def start_stream(
        self,
        status: int,
        headers: Http1Fields | Sequence[tuple[bytes, bytes]],
        close: bool = False,
    ) -> bytes:
        """The head of a streamed response (SSE): chunked to an HTTP/1.1 request,
        delimited by closing the connection to an HTTP/1.0 one."""
    def stream_data(self, data: bytes) -> bytes:
        """One piece of the streamed response's body, framed (``b""`` for empty data)."""
    def end_stream(self) -> bytes:
        """The end of the streamed response; the connection then reads the next request,
        or is closed."""

class NativeLane:
    """What the native engine's server answers a complete request with, fixed when it
    starts: ``server`` (its ``draining`` flag and the Python rest of a request's path:
    ``_general``, ``_usual``, ``_hot``, ``_eager_rest``, ``_judge``), the ``app`` whose
    usual POST is answered in the socket callback and its ``dispatch``
    (``dispatcher.answer``; both None: every request takes ``_general``), the endpoint's
    ``path`` and the ``gate`` header names, what the decode and an ``async`` tool's task
    need, and how many verdicts on sets of gate values it keeps (``max_verdicts``: each set
    is judged once, by the server's ``_judge``)."""

    def __init__(
        self,
        server: Any,
        app: Any,
        dispatch: Any,
        path: bytes,
        gate: Sequence[bytes],
        stateless: bool,
        max_depth: int,
        max_batch: int,
        task_loop: Any,
        modern: Any,
        max_body: int,
        max_verdicts: int,
    ) -> None: ...
    @property
    def draining(self) -> bool:
        """Whether :meth:`drain` was called."""
    def drain(self) -> None:
        """From now on every response closes its connection."""
    @property
    def verdicts(self) -> int:
        """How many verdicts are kept."""
    def answer(self, connection: Http1Protocol, request: Http1Request) -> bool:
        """Answer ``request`` on ``connection``: True when it was answered before this
        returns, False when a task finishes it."""

class Http1Protocol:
    """The base of the native engine's ``asyncio.Protocol``: ``data_received`` feeds the
    connection's state machine and answers the requests it completes through the server's
    :class:`NativeLane` (``server.native``), in order, as far as the connection may go on.
    Made with the server as first argument; the connection's state lives here."""

    @property
    def conn(self) -> Http1Connection:
        """The connection's HTTP/1.1 state machine."""
    transport: Any
    busy: Any
    gone: bool
    write_paused: bool
    read_paused: bool
    served: int

    def __init__(self, server: Any) -> None: ...
    def data_received(self, data: bytes) -> None: ...

def http1_simple_response(status: int, text: bytes) -> bytes:
    """A whole plain-text response that closes the connection (a timeout's 408, an
    overload's 503)."""

@final
class Http1Response:
    """A response read by :class:`Http1ClientConnection`: whole (``complete``), or the head
    of a streamed one whose body follows as ``bytes`` events."""

    @property
    def status(self) -> int: ...
    @property
    def http_version(self) -> bytes:
        """``b"1.1"`` or ``b"1.0"``."""
    @property
    def keep_alive(self) -> bool:
        """Whether the connection can carry another request after this response."""
    @property
    def complete(self) -> bool:
        """True for a whole response (body included), False for a streamed one's head."""
    @property
    def body(self) -> bytes:
        """The body of a whole response (``b""`` for a streamed one's head)."""
    def header(self, name: bytes) -> bytes | None:
        """The first value of header ``name`` (any case)."""
    def header_all(self, name: bytes) -> list[bytes]:
        """Every value of header ``name`` (any case), in order."""
    def headers(self) -> list[tuple[bytes, bytes]]:
        """Every header line as ``(name, value)``, in order."""

@final
class Http1ClientConnection:
    """A client's side of one HTTP/1.1 connection, without I/O: one request at a time;
    responses whole or streamed. Interim 1xx responses are skipped; bodies are delimited by
    Content-Length, chunked framing, or the server closing (``feed(b"")``). The limits are
    those of :class:`Http1Connection` (``max_body`` bounds a whole response's body)."""

    def __init__(
        self,
        *,
        max_line: int = ...,
        max_head: int = ...,
        max_headers: int = ...,
        max_body: int = ...,
        max_chunk_line: int = ...,
        max_trailers: int = ...,
    ) -> None: ...
    @property
    def idle(self) -> bool:
        """Whether a request can be written now."""
    @property
    def closed(self) -> bool:
        """Whether the connection can carry no more requests."""
    def request(
        self,
        method: bytes,
        target: bytes,
        headers: Sequence[tuple[bytes, bytes]],
        body: bytes | None = None,
        stream: bool = False,
    ) -> bytes:
        """The request's bytes: request line, ``headers`` (Host among them), and with a
        ``body`` its Content-Length. ``stream``: yield the response as it arrives."""
    def feed(self, data: bytes) -> list[Http1Response | bytes]:
        """Take received bytes (``b""``: the server closed its side); what completed: an
        :class:`Http1Response` (whole, or a streamed one's head), body data of a streamed
        response as ``bytes``, and ``b""`` at its end. Raises :class:`Http1Error` when the
        response is malformed or cut short."""

class Histogram:
    """An HDR histogram of non-negative integers (``jetmcp bench`` records microseconds):
    values from 1 to ``highest`` (larger ones are clamped to it) to ``significant_figures``.
    :meth:`counts` and :meth:`record_n` move one without loss between processes."""

    def __init__(self, highest: int = ..., significant_figures: int = ...) -> None: ...
    def record(self, value: int) -> None:
        """Record one value (clamped to the highest trackable value)."""
    def record_n(self, value: int, count: int) -> None:
        """Record ``value`` ``count`` times."""
    def add(self, other: Histogram) -> None:
        """Add every count of ``other``; ValueError when its values do not fit."""
    def reset(self) -> None: ...
    def value_at_quantile(self, quantile: float) -> int:
        """The value at ``quantile`` (0.0..1.0); 0 when empty."""
    @property
    def count(self) -> int: ...
    @property
    def min(self) -> int: ...
    @property
    def max(self) -> int: ...
    @property
    def mean(self) -> float: ...
    @property
    def stdev(self) -> float: ...
    @property
    def highest(self) -> int: ...
    @property
    def significant_figures(self) -> int: ...
    def counts(self) -> list[tuple[int, int]]:
        """Every populated bucket as ``(value, count)``, lowest first."""
    def percentiles(self, ticks: int = ...) -> list[tuple[float, int]]:
        """``(quantile, value)`` points, ``ticks`` per halving of the distance to 100%."""

class Drive:
    """``jetmcp bench``'s load loop over plain HTTP in Rust, the GIL released: connections to
    ``host``:``port`` posting to ``target``. ``items``: the mix in rotation order, each
    ``(label index, body before the id, body after it, header fields)``; ``batch`` requests
    per body (labelled ``batch_label``, with ``batch_fields``). Each phase returns what
    :meth:`jetmcp.bench.recorder.Recorder.to_raw` returns, less ``labels``."""

    def __init__(
        self,
        host: str,
        port: int,
        target: bytes,
        items: list[tuple[int, bytes, bytes, list[tuple[bytes, bytes]]]],
        labels: int,
        *,
        batch: int = ...,
        batch_label: int = ...,
        batch_fields: list[tuple[bytes, bytes]] = ...,
        timeout: float = ...,
        connect_timeout: float = ...,
        late_ns: int = ...,
        now_ns: int,
        first_id: int = ...,
    ) -> None: ...
    def fill(self, count: int) -> int:
        """Open connections until ``count`` are open; how many are."""
    def closed(
        self, lanes: int, duration: float | None = ..., count: int | None = ...
    ) -> dict[str, Any]:
        """The closed loop for ``duration`` seconds or ``count`` requests."""
    def open(
        self, rate: float, total: int, connections: int, max_connections: int
    ) -> dict[str, Any]:
        """The open model: ``total`` requests at ``rate`` a second."""
    def stop(self) -> None:
        """End the running phase soon (from another thread)."""
    @property
    def progress(self) -> int: ...
    @property
    def connect_errors(self) -> list[str]: ...
    @property
    def open_count(self) -> int: ...
    def close(self) -> None: ...
