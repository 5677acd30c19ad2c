"""The reply half of a Streamable HTTP POST, shared by both engines (Granian's RSGI app and
the native one, :mod:`jetmcp.transports.native`): what the dispatcher gave back sent with
the status its kind calls for, or as the end of the SSE stream a handler began; the
2026-07-28 rule that a client's disconnect cancels its request; the checks of a request's
revision and session owner. Split from :mod:`jetmcp.transports.http` (routing and POST)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from jetmcp import _wire
from jetmcp.core.call import Session
from jetmcp.core.exchange import Exchange, Started
from jetmcp.core.runners import resume
from jetmcp.errors import INVALID_REQUEST
from jetmcp.protocol import modern, revisions
from jetmcp.transports._http import HttpError, reply_status, status_headers
from jetmcp.transports.sse import PostStream

if TYPE_CHECKING:
    from jetmcp.core.principal import Principal
    from jetmcp.server.app import Server
    from jetmcp.settings import Settings


def owned(session: Session | None, principal: Principal | None) -> Session:
    """``session`` when it exists and belongs to ``principal``; else the 404 an unknown
    session gets (another principal learns nothing of it, not even that it exists)."""
    if session is None or session.principal != (principal.key if principal is not None else None):
        raise HttpError(404, INVALID_REQUEST, "Session not found")
    return session


def cancelling() -> bool:
    """Whether the current task is being cancelled. A body read that raised CancelledError
    while it is not was cancelled itself, by the body watch."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def chained(previous: Any, loop: Any, action: Callable[[], None]) -> Callable[[int, Any], None]:
    """A signal handler that schedules ``action`` on ``loop``, then runs ``previous`` (the
    event loop's own handler, through which granian learns it must stop)."""

    def handler(signum: int, frame: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is already closed
            loop.call_soon_threadsafe(action)
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_DFL:
            signal.signal(signum, signal.SIG_DFL)
            signal.raise_signal(signum)

    return handler


def revision_of(version: str | None, session: Session | None) -> revisions.Revision:
    """The revision of a request: its session's, checked against the header; else the
    header's; else the spec's default for HTTP."""
    if version is not None:
        header_rev = revisions.lookup(version.strip())
        if header_rev is None:
            raise HttpError(400, INVALID_REQUEST, f"Unsupported protocol version: {version}")
        if session is not None and header_rev is not session.revision:
            raise HttpError(
                400,
                INVALID_REQUEST,
                f"MCP-Protocol-Version {version} does not match the session's "
                f"{session.revision.version}",
            )
        return header_rev
    if session is not None:
        return session.revision
    return revisions.HTTP_DEFAULT


def opened_stream(ex: Exchange) -> PostStream | None:
    """The SSE stream a POST's handlers opened, if they did."""
    sink = ex.opened
    return sink if type(sink) is PostStream else None


def answered(ex: Exchange) -> bool:
    """Whether a POST's reply goes out as plain JSON now (no handler began a stream); if
    so, what is sent from here on has nowhere to go."""
    sink = ex.opened
    if sink is None:
        ex.opener = None  # a handler still running sends into NULL_SINK from now on
        return True
    if type(sink) is PostStream:
        if sink.streaming:
            return False
        sink.mark_done()
    return True


async def respond(
    proto: Any,
    pending: Started,
    ex: Exchange,
    headers: list[tuple[str, str]],
) -> None:
    """Send what :meth:`Dispatcher.start` gave back for a POST, awaiting it first when it
    has to wait: the final event of the stream when the reply became one, else a JSON body
    with the status its kind calls for (202 and none when nothing is owed). At a revision
    without sessions (2026-07-28) a client that goes away meanwhile cancels the request
    (there is no session to resume its stream in), which is then answered with nothing;
    at one with ``error_status`` a failed request says so in its status."""
    revision = ex.revision
    if pending is not None and not isinstance(pending, bytes):
        try:
            reply = await (pending if revision.sessions else unless_disconnected(pending, proto))
        except BaseException as exc:
            stream = opened_stream(ex)
            if stream is not None:
                stream.abandon()
            ex.opener = None
            if isinstance(exc, ClientGone):
                return
            raise
    else:
        reply = pending
    stream = opened_stream(ex)
    if stream is not None and stream.streaming:
        # A handler sent something first: the reply ends the stream it began.
        await stream.finish(reply)
        return
    answered(ex)
    if reply is None:
        proto.response_empty(202, [])
        return
    status = reply_status(reply, revision.error_status)
    proto.response_bytes(status, status_headers(status, headers), reply)


class ClientGone(Exception):
    """The client of a request disconnected before its reply."""


async def unless_disconnected(
    pending: Coroutine[Any, Any, bytes | None], proto: Any
) -> bytes | None:
    """Run ``pending`` to its reply in this task; if the client disconnects first, cancel
    it (at 2026-07-28 closing the response is how a client cancels, and ends a
    ``subscriptions/listen``), let it unwind, and raise :class:`ClientGone`.

    Its first step runs at once: a reply that needed no waiting costs no watcher. Only once
    it waits is the disconnect watched, and the watch cancels this very task, so the
    handler keeps running in the task it started in (what ``asyncio.timeout`` and anyio's
    cancel scopes inside it rely on)."""
    try:
        first = pending.send(None)
    except StopIteration as done:
        reply: bytes | None = done.value
        return reply
    task = asyncio.current_task()
    assert task is not None
    gone = False

    def on_gone(watch: asyncio.Future[Any]) -> None:
        nonlocal gone
        if watch.cancelled():
            return
        watch.exception()  # retrieved: a failed watch means the client is gone too
        gone = True
        task.cancel()

    watcher = asyncio.ensure_future(proto.client_disconnect())
    watcher.add_done_callback(on_gone)
    try:
        result: bytes | None = await resume(pending, first)
        return result
    except asyncio.CancelledError:
        if gone and task.uncancel() == 0:
            raise ClientGone from None
        raise  # this request is being cancelled otherwise too (shutdown): not ours to swallow
    finally:
        watcher.remove_done_callback(on_gone)
        watcher.cancel()


def legacy_initialize(frame: _wire.Frame) -> bool:
    """An ``initialize`` without a ``_meta`` protocol version is the legacy handshake,
    whatever ``MCP-Protocol-Version`` says (the version is negotiated in its body)."""
    return frame.initialize and not modern.has_modern_meta(frame.entries[0].params())


def asks_for_auth(settings: Settings, server: Server) -> bool:
    """Whether ``settings`` or ``server`` turn auth on (the bearer guard is then due)."""
    return bool(
        settings.auth_issuer
        or settings.auth_jwks_url
        or settings.auth_introspection_url
        or getattr(server, "auth", None) is not None
        or getattr(server, "token_verifier", None) is not None
    )


__all__ = [
    "ClientGone",
    "answered",
    "asks_for_auth",
    "cancelling",
    "chained",
    "legacy_initialize",
    "opened_stream",
    "owned",
    "respond",
    "revision_of",
    "unless_disconnected",
]
