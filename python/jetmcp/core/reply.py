"""What the dispatcher gives back for a body: its reply bytes, and, when that is not all
there is to say, a :class:`Reply` (the bytes, with their kind). Transports map a kind to
what they can say (an HTTP status); stdio writes the bytes alone."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jetmcp.core.call import Session

# What a reply is, beyond its body (Reply.kind). A transport maps each to what it can say
# (an HTTP status); stdio says nothing but the body.
#: A plain answer (one that has to say more than its body: a session it opened).
OK = 0
#: The body is not JSON (its reply is -32700).
PARSE_ERROR = 1
#: The body's only message is not a valid JSON-RPC message.
INVALID = 2
#: An array with more entries than the dispatcher takes.
TOO_LARGE = 3
#: The body's only request (or the body as a whole) failed: ``code`` is the JSON-RPC code.
FAILED = 4
#: Past the cap on requests waiting in the whole server, or in the client's session.
BUSY = 5
SESSION_BUSY = 6
#: The server is shutting down.
STOPPING = 7
#: What the body carried (an answer or a cancellation for another worker of its session)
#: was not delivered: the shared state refused or did not take the write.
UNDELIVERED = 8


class Reply(bytes):
    """A reply that says more than its body, which it is (so a transport that only writes
    bytes can write it as it is): its :attr:`kind`, the JSON-RPC error ``code`` of a
    ``FAILED`` one, and the :class:`~jetmcp.core.call.Session` an ``initialize`` opened. A
    plain answer is given back as ``bytes``, not as a Reply."""

    kind: int
    code: int | None
    session: Session | None

    def __new__(
        cls,
        body: bytes,
        kind: int = OK,
        code: int | None = None,
        session: Session | None = None,
    ) -> Reply:
        reply = super().__new__(cls, body)
        reply.kind = kind
        reply.code = code
        reply.session = session
        return reply


__all__ = [
    "BUSY",
    "FAILED",
    "INVALID",
    "OK",
    "PARSE_ERROR",
    "SESSION_BUSY",
    "STOPPING",
    "TOO_LARGE",
    "UNDELIVERED",
    "Reply",
]
