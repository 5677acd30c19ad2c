"""One fake of Granian's RSGI side, to drive an RSGI app (``await app.__rsgi__(scope, proto)``)
in this process: a header map that behaves as Granian's, a scope, and a protocol object that
keeps what the app answered.

Granian 2.8.9's header map, probed live: names are lower case; ``get`` gives a name's first
value, or the default when Granian cannot read that value (bytes outside visible ASCII) even
if a later one is readable; ``get_all`` and ``items`` give the readable values only, in order
of arrival; ``keys`` names each header once and ``in`` sees every name, readable or not. Here
a value of :data:`UNREADABLE` (None) stands for one Granian cannot read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any, Final, NamedTuple

#: A header value Granian cannot read.
UNREADABLE: Final = None

#: The headers of a usual 2025-06-18 POST of one JSON-RPC message.
POST_HEADERS: Final[Mapping[str, str]] = {
    "host": "127.0.0.1",
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-06-18",
}


class Headers:
    """Request headers as Granian's RSGI scope gives them (see the module docstring)."""

    def __init__(self, pairs: Iterable[tuple[str, str | None]] | Mapping[str, str | None]) -> None:
        items = pairs.items() if isinstance(pairs, Mapping) else pairs
        self._pairs = [(name.lower(), value) for name, value in items]

    def get(self, name: str, default: Any = None) -> Any:
        for key, value in self._pairs:
            if key == name:
                return default if value is UNREADABLE else value
        return default

    def get_all(self, name: str) -> list[str]:
        return [v for k, v in self._pairs if k == name and v is not UNREADABLE]

    def items(self) -> list[tuple[str, str]]:
        return [(k, v) for k, v in self._pairs if v is not UNREADABLE]

    def keys(self) -> list[str]:
        return list(dict.fromkeys(k for k, _ in self._pairs))

    def __contains__(self, name: object) -> bool:
        return any(k == name for k, _ in self._pairs)


class Scope:
    """An HTTP request's RSGI scope: ``POST /mcp`` over HTTP/1.1 unless told."""

    def __init__(
        self,
        headers: Iterable[tuple[str, str | None]] | Mapping[str, str | None] = POST_HEADERS,
        *,
        method: str = "POST",
        path: str = "/mcp",
        authority: str | None = None,
        http_version: str = "1.1",
        query_string: str = "",
    ) -> None:
        self.proto = "http"
        self.method = method
        self.path = path
        self.http_version = http_version
        self.authority = authority
        self.query_string = query_string
        self.headers = Headers(headers)


class Reply(NamedTuple):
    """One response: its status, headers and body (a stream's chunks in order, for a stream)."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes | list[bytes]


class Stream:
    """A streamed response's transport: keeps its chunks, in order."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []

    async def send_bytes(self, data: bytes) -> None:
        self.chunks.append(data)

    async def send_str(self, data: str) -> None:
        self.chunks.append(data.encode())


class Proto:
    """An HTTP request's RSGI protocol object: the body is at hand at once, the client never
    disconnects, and the one response the app begins is kept in :attr:`replies` (RSGI allows
    one per request: a second one is kept too, and raises)."""

    def __init__(self, body: bytes = b"") -> None:
        self.body = body
        self.replies: list[Reply] = []

    @property
    def reply(self) -> Reply | None:
        """The response, once the app began one."""
        return self.replies[0] if self.replies else None

    async def __call__(self) -> bytes:
        return self.body

    async def client_disconnect(self) -> None:
        await asyncio.Event().wait()

    def _begin(self, status: int, headers: Iterable[Iterable[str]], body: Any) -> None:
        pairs: list[tuple[str, str]] = [(k, v) for k, v in headers]
        self.replies.append(Reply(status, pairs, body))
        if len(self.replies) > 1:
            raise AssertionError(f"a second response ({status}) after {self.replies[0]}")

    def response_bytes(self, status: int, headers: Iterable[Iterable[str]], body: bytes) -> None:
        self._begin(status, headers, body)

    def response_str(self, status: int, headers: Iterable[Iterable[str]], body: str) -> None:
        self._begin(status, headers, body.encode())

    def response_empty(self, status: int, headers: Iterable[Iterable[str]]) -> None:
        self._begin(status, headers, b"")

    def response_stream(self, status: int, headers: Iterable[Iterable[str]]) -> Stream:
        stream = Stream()
        self._begin(status, headers, stream.chunks)
        return stream
