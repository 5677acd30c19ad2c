"""``subscriptions/listen`` (2026-07-28): the one channel for notifications not tied to a
request.

A client opens a listen request naming what it wants (``notifications``:
``toolsListChanged``, ``promptsListChanged``, ``resourcesListChanged`` booleans and
``resourceSubscriptions``, a list of resource URIs). The server honours the part its
capabilities support, says so first with ``notifications/subscriptions/acknowledged``, then
streams the matching ``notifications/*/list_changed`` and ``notifications/resources/updated``
on the request's own stream (its SSE response over HTTP, stdout on stdio). Every message of
the subscription carries ``_meta["io.modelcontextprotocol/subscriptionId"]``: the listen
request's id.

The request stays open until the client ends it (closing the HTTP stream, or
``notifications/cancelled`` on stdio: the transport cancels the handler, which sends nothing
more) or the server shuts down (:meth:`Subscriptions.close_all`: the request is answered with
``{"resultType": "complete", "_meta": {subscriptionId}}``; so is one that starts afterwards,
right after its acknowledgement, as a request read just before shutdown may start later).

Notifications are queued per subscription and written by its own handler, so a slow client
holds up nobody else, and a cancelled subscription cannot be written to afterwards.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from jetmcp.core.call import Call
from jetmcp.errors import INVALID_PARAMS, McpError
from jetmcp.protocol.meta import META_SUBSCRIPTION_ID

log = logging.getLogger("jetmcp")

#: The boolean filters, by the registry kind they follow, and the notification each sends.
LIST_FILTERS: dict[str, tuple[str, str]] = {
    "tools": ("toolsListChanged", "notifications/tools/list_changed"),
    "prompts": ("promptsListChanged", "notifications/prompts/list_changed"),
    "resources": ("resourcesListChanged", "notifications/resources/list_changed"),
}
RESOURCE_FILTER = "resourceSubscriptions"
RESOURCE_UPDATED = "notifications/resources/updated"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
#: Notifications waiting for a slow client, per subscription; beyond it they are dropped.
QUEUE_LIMIT = 1024

_CLOSE: Any = object()


def supported_filters(capabilities: dict[str, Any]) -> frozenset[str]:
    """The filters a server with these capabilities can honour."""
    out: set[str] = set()
    for kind, (name, _) in LIST_FILTERS.items():
        cap = capabilities.get(kind)
        if isinstance(cap, dict) and cap.get("listChanged") is True:
            out.add(name)
    resources = capabilities.get("resources")
    if isinstance(resources, dict) and resources.get("subscribe") is True:
        out.add(RESOURCE_FILTER)
    return frozenset(out)


def parse_filter(params: dict[str, Any]) -> dict[str, Any]:
    """The ``notifications`` filter of a listen request (-32602 when malformed)."""
    raw = params.get("notifications")
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise McpError(INVALID_PARAMS, "Invalid params: notifications must be an object")
    out: dict[str, Any] = {}
    for name, _ in LIST_FILTERS.values():
        value = raw.get(name)
        if value is None:
            continue
        if not isinstance(value, bool):
            raise McpError(
                INVALID_PARAMS, f"Invalid params: notifications.{name} must be a boolean"
            )
        out[name] = value
    uris = raw.get(RESOURCE_FILTER)
    if uris is not None:
        if not isinstance(uris, list) or not all(isinstance(u, str) for u in uris):
            raise McpError(
                INVALID_PARAMS, f"Invalid params: notifications.{RESOURCE_FILTER} must be strings"
            )
        out[RESOURCE_FILTER] = list(dict.fromkeys(uris))
    return out


class Subscription:
    """One open listen request."""

    __slots__ = ("done", "honoured", "id", "loop", "queue", "uris", "waiting")

    def __init__(
        self,
        subscription_id: Any,
        honoured: dict[str, Any],
        readable: Callable[[str], bool] | None = None,
    ) -> None:
        self.id = subscription_id
        self.honoured = honoured
        #: The URIs watched: those asked for, less what the caller may not read (a hidden
        #: resource is acknowledged like an unknown URI, and never announced).
        self.uris: frozenset[str] = frozenset(
            uri for uri in honoured.get(RESOURCE_FILTER, ()) if readable is None or readable(uri)
        )
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue[Any] = asyncio.Queue(QUEUE_LIMIT)
        #: list_changed methods queued and not yet sent (one of each is enough).
        self.waiting: set[str] = set()
        self.done = asyncio.Event()

    def wants(self, name: str) -> bool:
        return self.honoured.get(name) is True

    def offer(self, item: Any) -> None:
        """Queue a notification (``(method, params)``) or the close marker; any thread."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            self._put(item)
        elif not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._put, item)

    def _put(self, item: Any) -> None:
        if item is not _CLOSE:
            method = item[0]
            if item[1] is None:
                if method in self.waiting:
                    return
                self.waiting.add(method)
        try:
            self.queue.put_nowait(item)
        except asyncio.QueueFull:
            log.warning("subscription %r: %s dropped, the client is not reading", self.id, item[0])


class Subscriptions:
    """Every open listen request of one server."""

    __slots__ = ("_closed", "_live")

    def __init__(self) -> None:
        self._live: set[Subscription] = set()
        #: Set by close_all: the server is stopping, and no listen stays open any more.
        self._closed = False

    def __len__(self) -> int:
        return len(self._live)

    def list_changed(self, kind: str) -> None:
        """Tell the subscriptions that asked for it that the ``kind`` list changed."""
        name, method = LIST_FILTERS[kind]
        for sub in list(self._live):
            if sub.wants(name):
                sub.offer((method, None))

    def resource_updated(self, uri: str) -> None:
        for sub in list(self._live):
            if uri in sub.uris:
                sub.offer((RESOURCE_UPDATED, {"uri": uri}))

    async def listen(
        self,
        params: dict[str, Any],
        call: Call,
        supported: frozenset[str],
        readable: Callable[[str], bool] | None = None,
    ) -> dict[str, Any]:
        """Serve one listen request until it is cancelled or :meth:`close_all` ends it."""
        wanted = parse_filter(params)
        honoured = {
            name: value
            for name, value in wanted.items()
            if name in supported and (value is True or name == RESOURCE_FILTER)
        }
        sid = call.request_id
        meta = {META_SUBSCRIPTION_ID: sid}
        sub = Subscription(sid, honoured, readable)
        # Registered before the acknowledgement, so nothing that happens meanwhile is lost;
        # sent only after it, as the first message must be the acknowledgement.
        self._live.add(sub)
        if self._closed:
            sub.offer(_CLOSE)
        try:
            await call.notify(ACKNOWLEDGED, {"_meta": meta, "notifications": honoured})
            while True:
                item = await sub.queue.get()
                if item is _CLOSE:
                    break
                method, extra = item
                sub.waiting.discard(method)
                message = {**extra, "_meta": meta} if extra else {"_meta": meta}
                await call.notify(method, message)
            return {"resultType": "complete", "_meta": meta}
        finally:
            self._live.discard(sub)
            sub.done.set()

    async def close_all(self, timeout: float = 5.0) -> None:  # noqa: ASYNC109
        """End every subscription with its final result (server shutdown); waits at most
        ``timeout`` seconds for them to be written."""
        self._closed = True
        subs = list(self._live)
        for sub in subs:
            sub.offer(_CLOSE)
        current = asyncio.get_running_loop()
        waits = [asyncio.ensure_future(sub.done.wait()) for sub in subs if sub.loop is current]
        if not waits:
            return
        _, late = await asyncio.wait(waits, timeout=timeout)
        for waiter in late:
            waiter.cancel()


__all__ = [
    "ACKNOWLEDGED",
    "LIST_FILTERS",
    "RESOURCE_FILTER",
    "Subscription",
    "Subscriptions",
    "parse_filter",
    "supported_filters",
]
