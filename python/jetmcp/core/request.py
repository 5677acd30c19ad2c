"""The HTTP request a call came in on, as a tool may read it: :class:`RequestHeaders` (a
read-only, case-insensitive mapping of its headers) and :class:`HttpRequest` (the object
SDK 1.x puts in ``ctx.request_context.request`` and fastmcp's ``get_http_request()``
gives, reduced to what jetmcp knows of a request: its headers).

Nothing here is made per request unless a tool asks: the transports keep a reference to
the engine's own header map on the exchange (Granian's ``Headers``, or the native engine's
view of the parsed bytes), and the names and values are decoded on first access. On stdio
there is no request: ``Context.headers`` is None there, as SDK 2.x's ``ctx.headers`` is.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any


class RequestHeaders(Mapping[str, str]):
    """The headers of one HTTP request: a read-only mapping whose lookups ignore case
    (``headers["X-Api-Key"]`` and ``headers["x-api-key"]`` are the same). A header sent
    several times reads as its first value; :meth:`getlist` gives them all and
    :meth:`items` lists every pair (names in lower case), as Starlette's ``Headers`` do."""

    __slots__ = ("_first", "_pairs", "_raw")

    def __init__(self, raw: Any) -> None:
        #: The engine's header map (see :func:`_pairs_of`); decoded on first access.
        self._raw = raw
        self._pairs: list[tuple[str, str]] | None = None
        self._first: dict[str, str] | None = None

    def _decoded(self) -> dict[str, str]:
        first = self._first
        if first is None:
            pairs = [(name.lower(), value) for name, value in _pairs_of(self._raw)]
            first = {}
            for name, value in pairs:
                first.setdefault(name, value)
            self._pairs = pairs
            self._first = first
        return first

    def __getitem__(self, name: str) -> str:
        if not isinstance(name, str):
            raise KeyError(name)
        return self._decoded()[name.lower()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._decoded()

    def __iter__(self) -> Iterator[str]:
        return iter(self._decoded())

    def __len__(self) -> int:
        return len(self._decoded())

    def getlist(self, name: str) -> list[str]:
        """Every value of header ``name``, in the order sent."""
        self._decoded()
        wanted = name.lower()
        return [value for key, value in self._pairs or () if key == wanted]

    def raw_items(self) -> list[tuple[str, str]]:
        """Every ``(name, value)`` pair, repeated headers included (names in lower case)."""
        self._decoded()
        return list(self._pairs or ())

    def __repr__(self) -> str:
        return f"RequestHeaders({self.raw_items()!r})"


def _text(value: Any) -> str | None:
    """A header name or value as text: bytes of visible ASCII (and tabs) decoded, else
    None (such a value reads as absent, as under Granian)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray):
        if all(32 <= b < 127 or b == 9 for b in value):
            return value.decode("ascii")
        return None
    return str(value)


def _pairs_of(raw: Any) -> list[tuple[str, str]]:
    """The ``(name, value)`` pairs of an engine's header map: a mapping-like with
    ``items()`` (Granian's ``Headers``), the native engine's parsed request (whose
    ``headers()`` gives byte pairs), or an iterable of pairs."""
    if hasattr(raw, "items"):
        items = raw.items()
    elif callable(getattr(raw, "headers", None)):
        items = raw.headers()
    else:
        items = raw
    pairs = []
    for name, value in items:
        key, text = _text(name), _text(value)
        if key is not None and text is not None:
            pairs.append((key, text))
    return pairs


class _Scope(Mapping[str, Any]):
    """:attr:`HttpRequest.scope`: the ASGI scope's ``type``, ``method`` and ``headers``
    (byte pairs, lower-case names, decoded only if read). No ``user``: fastmcp's
    ``get_access_token()`` reads ``scope.get("user")`` and falls back to its context."""

    __slots__ = ("_request",)

    _KEYS = ("type", "method", "headers")

    def __init__(self, request: HttpRequest) -> None:
        self._request = request

    def __getitem__(self, key: str) -> Any:
        if key == "type":
            return "http"
        if key == "method":
            return "POST"
        if key == "headers":
            pairs = self._request.headers.raw_items()
            return [(k.encode("latin-1"), v.encode("latin-1")) for k, v in pairs]
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._KEYS)

    def __len__(self) -> int:
        return len(self._KEYS)


class HttpRequest:
    """The HTTP request a call came in on (read-only): what SDK 1.x tools find in
    ``ctx.request_context.request`` and fastmcp's ``get_http_request()`` returns, where
    those give a Starlette ``Request``. jetmcp has no Starlette request: this object has
    its :attr:`headers` (case-insensitive), its :attr:`method` (every MCP message comes in
    a POST) and a :attr:`scope` holding those, and nothing else of one (no body, URL,
    query parameters, cookies or client address)."""

    __slots__ = ("_headers", "_raw")

    #: Every request a call comes in on is a POST.
    method = "POST"

    def __init__(self, raw: Any) -> None:
        self._raw = raw
        self._headers: RequestHeaders | None = None

    @property
    def scope(self) -> Mapping[str, Any]:
        """The ASGI scope's ``type``, ``method`` and ``headers`` (see :class:`_Scope`)."""
        return _Scope(self)

    @property
    def headers(self) -> RequestHeaders:
        """The request's headers (decoded on first access)."""
        headers = self._headers
        if headers is None:
            headers = self._headers = RequestHeaders(self._raw)
        return headers

    def __repr__(self) -> str:
        return "HttpRequest()"


def http_request(raw: Any) -> HttpRequest | None:
    """The request object of an exchange's raw header map (None: no HTTP request)."""
    return None if raw is None else HttpRequest(raw)


__all__ = ["HttpRequest", "RequestHeaders", "http_request"]
