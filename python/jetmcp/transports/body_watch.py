"""The watch on request bodies being read (engine-neutral: the HTTP app keeps the reads,
this decides which to cancel; a cancelled read answers 408 and closes its connection).

A read is cancelled once it is older than ``body_timeout_seconds``. Under pressure, when
at least half of the worker's connection cap (``max_connections``, Granian's
``backpressure``) is taken by body reads, a read is cancelled once it is older than
``header_timeout_seconds`` instead, oldest first: connections held by stalled or slow
bodies are what keeps a new client out (Granian accepts no connection past the cap), and a
new well-formed client must not wait longer than the header timeout for them (issue 40
item 4: 64 slow-body sockets made one wait the whole 5 s body timeout). Bodies sent with
``Content-Length`` and chunked ones (:func:`read_chunks`) are watched alike.

The connection cap is the one in force: ``jetmcp run`` lowers ``max_connections`` to fit the
open files limit before its workers start, and they are given the lowered value.
"""

from __future__ import annotations

from typing import Any

from jetmcp.settings import Settings

#: The longest pause between two looks, in seconds.
MAX_INTERVAL = 1.0


class TooLarge(ValueError):
    """A chunked body past ``max_body_bytes`` (the HTTP app answers 413)."""


async def read_chunks(chunks: Any, limit: int) -> bytes:
    """A body sent without ``Content-Length``: the chunks ``chunks`` yields (an RSGI
    protocol's async iteration), joined; :class:`TooLarge` once past ``limit`` bytes. Run as
    a task of its own, so the watch can cancel it like any other body read."""
    parts: list[bytes] = []
    total = 0
    async for chunk in chunks:
        total += len(chunk)
        if total > limit:
            raise TooLarge(f"Body exceeds {limit} bytes")
        parts.append(chunk)
    return b"".join(parts)


def interval_of(settings: Settings) -> float:
    """Seconds between two looks: a quarter of the shorter timeout, at most a second."""
    header = settings.header_timeout_seconds
    shortest = min(settings.body_timeout_seconds, header if header > 0 else MAX_INTERVAL * 4)
    return max(0.01, min(MAX_INTERVAL, shortest / 4))


def under_pressure(reading: int, settings: Settings) -> bool:
    """Whether ``reading`` body reads take at least half the connection cap."""
    return reading * 2 >= max(2, settings.max_connections)


def evict_stalled(reading: dict[Any, float], now: float, settings: Settings) -> float:
    """Cancel the reads of ``reading`` (future -> when it began, oldest first) that are past
    their limit as of ``now``; the seconds until the next look. A read's stamp may lag its
    start by one interval, and the look by another: the limit is cut by both under
    pressure, so a stalled read holds a connection at most about the header timeout."""
    interval = interval_of(settings)
    limit = settings.body_timeout_seconds
    since = now - limit - interval
    if settings.header_timeout_seconds > 0 and under_pressure(len(reading), settings):
        short = max(interval, settings.header_timeout_seconds - 2 * interval)
        since = max(since, now - short)
    while reading:
        future, began = next(iter(reading.items()))
        if began > since:
            break
        del reading[future]
        future.cancel()
    return interval


__all__ = [
    "MAX_INTERVAL",
    "TooLarge",
    "evict_stalled",
    "interval_of",
    "read_chunks",
    "under_pressure",
]
