"""The JSON-RPC wire core of jetmcp, written in Rust.

It reads request bytes without re-serializing them: every message's ``id`` is kept as its
raw lexeme (the exact input bytes) and spliced back into the reply byte for byte.
"""

from collections.abc import Callable
from typing import Any, Final, final

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

@final
class Frame:
    """What :func:`decode` found in one body."""

    kind: int
    """One of the FRAME_* constants."""
    entries: list[Entry]
    """The messages: one for FRAME_SINGLE, each array element for FRAME_BATCH, else empty."""
    error: str | None
    """For FRAME_PARSE_ERROR and FRAME_BATCH_TOO_LARGE: what went wrong."""

def decode(body: bytes, max_depth: int = ..., max_batch: int = ...) -> Frame:
    """Frame one JSON-RPC body. Never raises for bad input: bad input is described by the
    frame and its entries. ``max_depth`` bounds nesting (deeper is a parse error; the batch
    array is one level, an entry object another); ``max_batch`` bounds the entries of an
    array. The whole body is validated before any entry is returned (a syntax error anywhere,
    even past ``max_batch``, is FRAME_PARSE_ERROR). Raises TypeError only for a non-``bytes``
    body. Bodies of 64 KiB and more are scanned with the GIL released."""

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

def encode_result(raw_id: bytes, result: Any) -> bytes:
    """``{"jsonrpc":"2.0","id":<raw_id>,"result":<result>}`` with ``raw_id`` spliced in as is.

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

# Calls of plain tools answered inside the extension (rust/src/py_route.rs).

@final
class ToolRoute:
    """How the extension calls one tool: a synchronous function whose parameters are all
    ``str``/``int``/``float``/``bool``."""

    def __init__(
        self,
        tool: Any,
        func: Callable[..., Any],
        params: list[tuple[str, type, Any, bool]],
        required: Any,
        fast_types: list[type],
        structured: bool,
        positional: bool = False,
    ) -> None:
        """``params``: (name, type, default, whether None is allowed) in signature order,
        ``required`` standing for "no default"; ``fast_types``: the return types (of int,
        str, bool) written without Python; ``structured``: whether such a result carries
        ``structuredContent``; ``positional``: pass the arguments by position (only where
        that binds the same)."""
    @property
    def names(self) -> list[str]: ...
    @property
    def positional(self) -> bool: ...

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

#: ``on_python(tool, raw_id, revision, outcome, failed)``: the reply bytes for a return value
#: the extension does not write itself (``failed`` False) or an exception (``failed`` True).
OnPython = Callable[[Any, bytes, Any, Any, bool], bytes]

def route(
    frame: Frame,
    routes: Routes,
    revision: Any,
    structured: bool,
    on_python: OnPython,
) -> bytes | None:
    """For a single message that calls a routed tool: call it and give back the reply. None
    (and nothing was run) for any other message or any call it is not sure of: ``params``
    with other members than ``name`` and ``arguments``, an argument not exactly of its
    parameter's type, a repeated or missing one."""

def route_all(
    frame: Frame,
    routes: Routes,
    revision: Any,
    structured: bool,
    on_python: OnPython,
) -> bytes | None:
    """For a batch whose entries are all calls of routed tools: call them in order and give
    back the batch reply. None, and nothing ran, when any entry is something else."""

def route_batch(
    frame: Frame,
    routes: Routes,
    revision: Any,
    structured: bool,
    on_python: OnPython,
    fallback: Callable[[Entry], Any],
) -> bytes | list[Any] | None:
    """Every entry in order: routed calls answered here, every other entry given to
    ``fallback`` (None: nothing owed; bytes: the reply; anything else: still running). The
    batch reply, None when nothing is owed, or the list of replies and running entries."""
