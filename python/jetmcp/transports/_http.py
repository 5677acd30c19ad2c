"""What the two HTTP transports (Streamable HTTP, :mod:`~jetmcp.transports.http`, and the
2024-11-05 HTTP+SSE one, :mod:`~jetmcp.transports.http_sse`) share: early refusals, header
reading, ``Accept``/``Content-Type``/``Content-Length`` judgement, and the HTTP status of
each kind of reply the dispatcher gives back.

The judgements are pure functions of header values, cached per value (clients send the same
few values again and again) with :func:`functools.lru_cache`, so the POST path pays a lookup
for each.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Any

from jetmcp import _wire
from jetmcp.core.reply import (
    BUSY,
    FAILED,
    INVALID,
    OK,
    SESSION_BUSY,
    STOPPING,
    TOO_LARGE,
    UNDELIVERED,
    Reply,
)
from jetmcp.core.reply import PARSE_ERROR as PARSE_ERROR_KIND
from jetmcp.errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
)

log = logging.getLogger("jetmcp.http")

JSON_HEADERS = [("content-type", "application/json")]
#: Sent with the 429s and 503s of the caps: the refusals that a later retry may get past.
RETRY_AFTER = ("retry-after", "1")
#: A write to a stream whose client is gone (granian's RSGIProtocolClosed is a RuntimeError).
GONE = (RuntimeError, OSError)
_encode_error = _wire.encode_error

#: What an ``Accept`` header allows: JSON replies, SSE replies.
ACCEPT_JSON = 1
ACCEPT_SSE = 2


class HttpError(Exception):
    """Ends a request early with a status and an id-less JSON-RPC error body (and
    ``headers`` besides the content type, e.g. ``Retry-After``)."""

    def __init__(
        self, status: int, code: int, message: str, headers: list[tuple[str, str]] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers

    def send(self, proto: Any) -> None:
        out = JSON_HEADERS if self.headers is None else [*JSON_HEADERS, *self.headers]
        proto.response_bytes(self.status, out, _encode_error(None, self.code, self.message))


# ---------------------------------------------------------------------------- statuses

#: The status of each kind of reply (a FAILED one is looked up by its code).
_KIND_STATUS = {OK: 200, PARSE_ERROR_KIND: 400, INVALID: 400, TOO_LARGE: 413, BUSY: 503,
                SESSION_BUSY: 429, STOPPING: 503, UNDELIVERED: 503}  # fmt: skip
#: 2026-07-28: the status of a single request's error reply, by its JSON-RPC code (client
#: errors 400, an unknown method 404, anything else 200).
_MODERN_FAILURE = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    METHOD_NOT_FOUND: 404,
    HEADER_MISMATCH: 400,
    MISSING_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
}


def reply_status(reply: bytes, error_status: bool) -> int:
    """The HTTP status of a reply :meth:`~jetmcp.core.dispatch.Dispatcher.start` gave back.
    ``error_status``: the revision's flag (2026-07-28 on), where a failed request says so
    in its status too; before it a JSON-RPC error is a 200 like any answer."""
    if type(reply) is bytes:
        return 200
    assert isinstance(reply, Reply)
    if reply.kind == FAILED:
        code = reply.code
        return _MODERN_FAILURE.get(code, 200) if error_status and code is not None else 200
    return _KIND_STATUS[reply.kind]


def status_headers(status: int, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``headers`` with ``Retry-After`` where the status invites a retry."""
    return [*headers, RETRY_AFTER] if status == 503 or status == 429 else headers


# ---------------------------------------------------------------------------- headers


def first(headers: Any, name: str) -> str | None:
    """A header's value: the first of its values Granian can read (None when it has none).
    Granian hands over a value with bytes outside visible ASCII as absent, and its ``get``
    gives None when the first value is such, even if a later one is readable. The HTTP
    transports read the headers of MCP requests this way instead (``Authorization`` is the
    bearer guard's), as ``jetmcp._wire.Gate`` reads them."""
    values: list[str] = headers.get_all(name)
    return values[0] if values else None


def header(headers: Any, name: str) -> str | None:
    """:func:`first`; 400 when the header was sent but none of its values can be read (it
    must not count as absent)."""
    value = first(headers, name)
    if value is None:
        unreadable(headers, name)
    return value


def unreadable(headers: Any, name: str) -> None:
    """Raise the 400 for header ``name`` when it was sent but could not be read."""
    if name in headers:
        raise HttpError(
            400, INVALID_REQUEST, f"The {name} header cannot be read: visible ASCII only"
        )


@lru_cache(maxsize=256)
def accept_flags(accept: str | None) -> int:
    """``ACCEPT_JSON | ACCEPT_SSE`` as ``accept`` allows (media ranges count, ``q=0`` is a
    refusal). No header at all allows JSON only: the spec has clients list both, so one that
    lists nothing is not listening for a stream."""
    if accept is None:
        return ACCEPT_JSON
    flags = 0
    for part in accept.split(","):
        media, _, params = part.partition(";")
        media = media.strip().lower()
        if params and _q_zero(params):
            continue
        if media == "application/json" or media == "application/*":
            flags |= ACCEPT_JSON
        elif media == "text/event-stream" or media == "text/*":
            flags |= ACCEPT_SSE
        elif media == "*/*":
            flags |= ACCEPT_JSON | ACCEPT_SSE
    return flags


def _q_zero(params: str) -> bool:
    for param in params.split(";"):
        name, _, value = param.partition("=")
        if name.strip().lower() == "q":
            try:
                return float(value.strip()) == 0.0
            except ValueError:
                return False
    return False


@lru_cache(maxsize=256)
def is_json(content_type: str | None) -> bool:
    if content_type is None:
        return False
    return content_type.split(";", 1)[0].strip().lower() == "application/json"


@lru_cache(maxsize=256)
def post_flags(content_type: str | None, accept: str | None) -> int:
    """The ``Accept`` flags of a POST whose ``Content-Type`` and ``Accept`` headers are
    fine; 0 for a wrong ``Content-Type`` and -1 for an ``Accept`` that takes neither reply
    (:func:`post_refusal` says why). A number, so the verdict is cached either way."""
    if not is_json(content_type):
        return 0
    return accept_flags(accept) or -1


def post_refusal(flags: int) -> HttpError:
    """The 415 or 406 of a POST :func:`post_flags` refused."""
    if flags == 0:
        return HttpError(415, INVALID_REQUEST, "Content-Type must be application/json")
    return HttpError(
        406, INVALID_REQUEST, "Not Acceptable: accept application/json or text/event-stream"
    )


@lru_cache(maxsize=4096)
def length_verdict(length: str, limit: int) -> int:
    """0 for a ``Content-Length`` within ``limit``, else what :func:`length_refusal`
    takes: -1 for a value that is not a length, 1 for one over the limit."""
    try:
        size = int(length)
    except ValueError:
        return -1
    if size < 0:
        return -1
    return 0 if size <= limit else 1


def length_refusal(verdict: int, limit: int) -> HttpError:
    if verdict < 0:
        return HttpError(400, INVALID_REQUEST, "Invalid Content-Length")
    return HttpError(413, INVALID_REQUEST, f"Body exceeds {limit} bytes")


def check_length(length: str, limit: int) -> None:
    """Raise the 400 or 413 a declared ``Content-Length`` calls for."""
    verdict = length_verdict(length, limit)
    if verdict:
        raise length_refusal(verdict, limit)


def incomplete_body() -> HttpError:
    log.debug("a request body ended before its Content-Length (the client closed early)")
    return HttpError(400, INVALID_REQUEST, "Incomplete body: the connection ended before it")


def method_not_allowed(proto: Any, method: str, allow: str) -> None:
    proto.response_bytes(
        405,
        [*JSON_HEADERS, ("allow", allow)],
        _encode_error(None, INVALID_REQUEST, f"Method not allowed: {method}"),
    )


__all__ = [
    "ACCEPT_JSON",
    "ACCEPT_SSE",
    "GONE",
    "JSON_HEADERS",
    "RETRY_AFTER",
    "HttpError",
    "accept_flags",
    "check_length",
    "header",
    "incomplete_body",
    "is_json",
    "length_refusal",
    "length_verdict",
    "method_not_allowed",
    "post_flags",
    "post_refusal",
    "reply_status",
    "status_headers",
    "unreadable",
]
