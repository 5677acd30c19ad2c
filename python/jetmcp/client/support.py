"""What the client's session needs besides the :class:`~jetmcp.client.session.Client` class:
header values as sent, dumping handler results, encoding errors and notifications, turning
a reply entry into a :class:`~jetmcp.client.batch.Response`, and the bookkeeping of the tasks
and futures of a round.
"""

from __future__ import annotations

import asyncio
import base64
import re
from collections.abc import (
    Awaitable,
    Mapping,
    Sequence,
)
from typing import Any, TypeVar

from pydantic import BaseModel

from jetmcp import _wire
from jetmcp.client.batch import UNSET as _UNSET
from jetmcp.client.batch import (
    Response,
)
from jetmcp.client.transports import (
    HttpStatusError,
    error_from,
    with_status,
)
from jetmcp.client.types import (
    Root,
)
from jetmcp.errors import (
    INTERNAL_ERROR,
    McpError,
)
from jetmcp.protocol import revisions
from jetmcp.protocol.revisions import Revision

T2 = TypeVar("T2")
_HEADER_SAFE = re.compile(r"[\x20-\x7e]*")


def encode_header_value(value: str) -> str:
    """A header value as sent: verbatim when it is plain printable ASCII without edge spaces
    (and does not look like the sentinel), else ``=?base64?<UTF-8 in base64>?=``."""
    if (
        _HEADER_SAFE.fullmatch(value)
        and value == value.strip(" ")
        and not (value.startswith("=?base64?") and value.endswith("?="))
    ):
        return value
    return f"=?base64?{base64.b64encode(value.encode('utf-8')).decode('ascii')}?="


def header_scalar(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        return encode_header_value(value)
    return None


def dump(value: Any) -> dict[str, Any]:
    if isinstance(value, BaseModel):
        out: dict[str, Any] = value.model_dump(by_alias=True, exclude_none=True, mode="json")
        return out
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"a handler must return a dict or a model, not {type(value).__name__}")


async def maybe_await(value: Any) -> Any:
    if isinstance(value, Awaitable):
        return await value
    return value


def version() -> str:
    from jetmcp import __version__

    return __version__


def revision_of(revision: str | Revision) -> Revision:
    if isinstance(revision, Revision):
        return revision
    found = revisions.lookup(revision) or revisions.lookup_modern(revision)
    if found is None:
        known = [r.version for r in (*revisions.LEGACY, *revisions.MODERN)]
        raise ValueError(f"unknown MCP revision {revision!r}; known: {', '.join(known)}")
    return found


def root(item: Root | str | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(item, str):
        return {"uri": item}
    return dump(item)


def encode_error(raw_id: bytes, exc: McpError) -> bytes:
    if exc.has_data:
        return _wire.encode_error(raw_id, exc.code, exc.message, exc.data)
    return _wire.encode_error(raw_id, exc.code, exc.message)


def encode_notification(method: str, params: dict[str, Any] | None) -> bytes:
    if params is None:
        return _wire.encode_notification(method)
    return _wire.encode_notification(method, params)


def response(entry: _wire.Entry, status: int) -> Response:
    body = entry.result()
    if entry.is_error:
        error = error_from(body)
        if status >= 400:
            error = with_status(error, status)
        return Response(error=error, http_status=status)
    if not isinstance(body, dict):
        return Response(
            error=McpError(INTERNAL_ERROR, f"the result is not an object: {body!r}"),
            http_status=status,
        )
    return Response(body, http_status=status)


async def gather_all(tasks: Sequence[asyncio.Future[T2]]) -> list[T2]:
    """Every task's result in order; when one fails (or the caller is cancelled) the
    others are cancelled too, so nothing is left running."""
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def chunks(
    parts: list[bytes], notes: int, wids: list[int], limit: int
) -> list[tuple[list[bytes], list[int]]]:
    """``parts`` (``notes`` notifications first, then one request per wid) cut into arrays
    of at most ``limit`` entries, each with the wids of its requests."""
    out: list[tuple[list[bytes], list[int]]] = []
    for start in range(0, len(parts), limit):
        chunk = parts[start : start + limit]
        first = max(start - notes, 0)
        last = max(start + len(chunk) - notes, 0)
        out.append((chunk, wids[first:last]))
    return out


def retrieve(task: asyncio.Future[Any]) -> None:
    """Mark a task's outcome as seen (it was given up on; its failure is no news)."""
    if not task.cancelled():
        task.exception()


def lost() -> McpError:
    return McpError(INTERNAL_ERROR, "no answer")


def any_waiting(futs: Sequence[asyncio.Future[Response]]) -> bool:
    return any(not f.done() for f in futs)


def exchange_done(futs: Sequence[asyncio.Future[Response]], task: asyncio.Task[None]) -> None:
    """An HTTP reply ended: whatever it left unanswered gets the reason."""
    if task.cancelled():
        return
    exc = task.exception()
    for fut in futs:
        if fut.done():
            continue
        if isinstance(exc, McpError):
            status = exc.status if isinstance(exc, HttpStatusError) else 0
            fut.set_result(Response(error=exc, http_status=status))
        elif exc is not None:
            fut.set_exception(exc)
        else:
            fut.set_result(
                Response(
                    error=McpError(INTERNAL_ERROR, "the server's reply ended without an answer")
                )
            )


def answer_params(original: dict[str, Any], answer: tuple[dict[str, Any], Any]) -> dict[str, Any]:
    """An MRTR retry's params: the original ones, ``inputResponses``, the echoed state."""
    responses, state = answer
    params = {**original, "inputResponses": responses}
    if state is not _UNSET:
        params["requestState"] = state
    else:
        params.pop("requestState", None)
    return params


__all__ = [
    "answer_params",
    "any_waiting",
    "chunks",
    "dump",
    "encode_error",
    "encode_header_value",
    "encode_notification",
    "exchange_done",
    "gather_all",
    "header_scalar",
    "lost",
    "maybe_await",
    "response",
    "retrieve",
    "revision_of",
    "root",
    "version",
]
