"""Health endpoints for orchestrators, on the MCP port, engine-neutral (an HTTP engine asks
:meth:`Health.answer` for a path and writes what it returns):

- ``GET /healthz``: liveness. This worker's event loop answered: 200 ``{"status":"ok"}``.
- ``GET /readyz``: readiness. 200 ``{"status":"ready"}`` while the worker serves and its
  shared state answers (with Redis: its pub/sub link is up and a ``PING`` came back within
  ``ready_ping_seconds``, or the Redis timeout when that is shorter); 503
  ``{"status":"draining"}`` once a graceful stop began, 503 ``{"status":"unavailable"}``
  while Redis does not answer. A Redis verdict is kept ``ready_cache_seconds``, so probes
  every second (from every replica's kubelet, or a load balancer) cost at most one ``PING``
  per period per worker. (Both are settings, ``--ready-cache-seconds`` and
  ``--ready-ping-seconds``, 1 s by default.)

Both are served before the Host/Origin checks and the bearer guard (an orchestrator's probe
carries no token, and its Host is the pod's address), open no MCP session and count in no
cap. ``HEAD`` is answered like ``GET`` without the body; other methods get 405.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

LIVENESS_PATH = "/healthz"
READINESS_PATH = "/readyz"
HEALTH_PATHS = frozenset((LIVENESS_PATH, READINESS_PATH))

_HEADERS = [("content-type", "application/json"), ("cache-control", "no-store")]
OK = b'{"status":"ok"}'
READY = b'{"status":"ready"}'
DRAINING = b'{"status":"draining"}'
UNAVAILABLE = b'{"status":"unavailable"}'


class Health:
    """The answers of the two endpoints for one worker's app. ``store``: its session store
    (a Redis one has ``state``, a :class:`~jetmcp.state.redis_link.RedisState`)."""

    def __init__(self, store: Any) -> None:
        self.state: Any = getattr(store, "state", None)
        #: Set when the worker begins a graceful stop: readiness answers 503 from then on.
        self.draining = False
        self._verdict = True
        self._until = 0.0
        self._probe: asyncio.Future[bool] | None = None

    async def serve(self, scope: Any, proto: Any, draining: object = None) -> None:
        """Answer the request on an RSGI-like ``proto`` (``response_bytes``)."""
        proto.response_bytes(*await self.answer(scope, draining))

    async def answer(
        self, scope: Any, draining: object = None
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        """Status, headers and body for a request to one of :data:`HEALTH_PATHS` (``scope``: its
        ``path`` and ``method``); ``draining``: anything but None once the worker began a
        graceful stop (or set :attr:`draining`)."""
        path, method = scope.path, scope.method
        if method not in ("GET", "HEAD"):
            return 405, [*_HEADERS, ("allow", "GET, HEAD")], b'{"status":"method not allowed"}'
        if path == LIVENESS_PATH:
            status, body = 200, OK
        elif self.draining or draining is not None:
            status, body = 503, DRAINING
        elif not await self.shared_state_answers():
            status, body = 503, UNAVAILABLE
        else:
            status, body = 200, READY
        return status, _HEADERS, b"" if method == "HEAD" else body

    async def shared_state_answers(self) -> bool:
        """Whether the shared state answers (True without one): cached, and one ``PING`` at a
        time however many probes come at once."""
        state = self.state
        if state is None:
            return True
        if not state.healthy:
            return False  # the pub/sub link is down: sessions get 503 too
        now = time.monotonic()
        if now < self._until:
            return self._verdict
        if self._probe is None or self._probe.done():
            self._probe = asyncio.ensure_future(self._ping())
        return await asyncio.shield(self._probe)

    async def _ping(self) -> bool:
        state = self.state
        settings = state.settings
        bound = min(settings.ready_ping_seconds, settings.redis_timeout_seconds)
        try:
            async with asyncio.timeout(bound):
                await state.client.ping()
            verdict = True
        except Exception:
            verdict = False
        self._verdict = verdict
        self._until = time.monotonic() + settings.ready_cache_seconds
        return verdict


async def serve_health(app: Any, scope: Any, proto: Any, draining: object = None) -> None:
    """The hook an HTTP engine calls for a request to one of :data:`HEALTH_PATHS`: ``app``
    (its ``store``) keeps its :class:`Health` from the first probe on."""
    health = getattr(app, "_health", None)
    if health is None:
        health = app._health = Health(app.store)
    await health.serve(scope, proto, draining)


__all__ = [
    "HEALTH_PATHS",
    "LIVENESS_PATH",
    "READINESS_PATH",
    "Health",
    "serve_health",
]
