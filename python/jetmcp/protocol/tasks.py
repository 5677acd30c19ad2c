"""What a task is in either revision's terms (2025-11-25 tasks, the 2026-07-28 tasks
extension): its statuses, its timestamps, the ``_meta`` key tying a message to it, and what
``tasks/result`` answers for one that ended. The records themselves are the server's
(:mod:`jetmcp.server.tasks`); a store shared between processes keeps them by these rules
too (:mod:`jetmcp.state.redis_tasks`)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from jetmcp.errors import McpError

#: The ``_meta`` key tying a message to its task.
RELATED_TASK = "io.modelcontextprotocol/related-task"

Status = Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})


def now() -> str:
    """The time as the tasks' timestamps give it (ISO 8601, milliseconds, UTC)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def related(task_id: str) -> dict[str, Any]:
    """The ``_meta`` entry relating a message to task ``task_id``."""
    return {RELATED_TASK: {"taskId": task_id}}


def outcome_of(task_id: str, error: McpError | None, result: dict[str, Any] | None) -> Any:
    """What ``tasks/result`` answers for a terminal task: its result (tied to the task in
    ``_meta``), or its error raised again."""
    if error is not None:
        if error.has_data:
            raise McpError(error.code, error.message, error.data)
        raise McpError(error.code, error.message)
    out = dict(result or {})
    meta = out.get("_meta")
    out["_meta"] = {**(meta if isinstance(meta, dict) else {}), **related(task_id)}
    return out


__all__ = ["RELATED_TASK", "TERMINAL", "Status", "now", "outcome_of", "related"]
