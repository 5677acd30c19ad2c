"""What ``jetmcp run`` says, and where: the one start-up line over HTTP, and over stdio a
stdout that carries MCP messages only."""

from __future__ import annotations

import os
import sys

from jetmcp.settings import Settings


def startup_line(name: str, settings: Settings) -> str:
    """What ``jetmcp run --transport http`` says once on stderr as it starts."""
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    workers = settings.workers
    plural = "worker" if workers == 1 else "workers"
    return f"serving {name} at http://{host}:{settings.port}{settings.path} ({workers} {plural})"


def keep_stdout() -> int | None:
    """stdout for MCP messages only: its file descriptor kept apart for the transport, and
    fd 1 (``print()``, a C library's writes, a subprocess's inherited stdout) pointed at
    stderr. None (stdout used as it is) when either cannot be done."""
    try:
        sys.stdout.flush()
        kept = os.dup(1)
    except (OSError, ValueError):
        return None
    try:
        os.dup2(2, 1)
    except OSError:
        os.close(kept)
        return None
    return kept


__all__ = ["keep_stdout", "startup_line"]
