"""Batches: :class:`Response` (one slot of a batch) and :class:`BatchBuilder`.

A batch is a list of requests (and notifications) sent together. Where the revision has
JSON-RPC batches they go out as one array; where it does not, the client sends them as
concurrent single requests. Either way ``send()`` returns one :class:`Response` per request,
in the order the requests were added, so there is one code path for users.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from jetmcp.errors import INTERNAL_ERROR, McpError

if TYPE_CHECKING:
    from jetmcp.client.session import Client

T = TypeVar("T", bound=BaseModel)

#: "Not given" (an MRTR result without ``requestState``).
UNSET: Any = object()


class Response:
    """The answer to one request: ``result`` (a dict) or ``error`` (an :class:`McpError`).

    ``id`` is the caller's id for :meth:`Client.call_batch` entries and the slot's position
    for builder entries; the id that went over the wire is the client's own.
    """

    __slots__ = ("error", "http_status", "id", "result")

    def __init__(
        self,
        result: dict[str, Any] | None = None,
        error: McpError | None = None,
        *,
        id: Any = None,
        http_status: int = 0,
    ) -> None:
        self.id = id
        self.result = result
        self.error = error
        #: The HTTP status the answer came with (0 on stdio).
        self.http_status = http_status

    @property
    def ok(self) -> bool:
        return self.error is None

    def unwrap(self) -> dict[str, Any]:
        """The result dict, or raise the error."""
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result

    def into_result(self, result_type: type[T]) -> T:
        """The result as ``result_type`` (e.g. ``CallToolResult``), or raise the error. A
        result that does not fit the type raises ``McpError`` (``INTERNAL_ERROR``)."""
        result = self.unwrap()
        try:
            return result_type.model_validate(result)
        except ValidationError as exc:
            raise McpError(
                INTERNAL_ERROR,
                f"the result does not fit {result_type.__name__}: {exc.errors()[0]['msg']}",
                {"result": result},
            ) from exc

    def __repr__(self) -> str:
        if self.error is not None:
            return f"Response(id={self.id!r}, error={self.error!r})"
        return f"Response(id={self.id!r}, result={self.result!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Response):
            return NotImplemented
        return (self.id, self.result, _error_key(self.error)) == (
            other.id,
            other.result,
            _error_key(other.error),
        )

    __hash__ = None  # type: ignore[assignment]


def _error_key(error: McpError | None) -> Any:
    return None if error is None else (error.code, error.message)


class BatchBuilder:
    """Collects requests for one :meth:`send`. Every method returns the builder, so calls
    chain: ``tools, add = await client.batch().list_tools().call_tool("add", {...}).send()``.
    """

    def __init__(self, client: Client) -> None:
        self._client = client
        self._requests: list[tuple[str, dict[str, Any]]] = []
        self._notifications: list[tuple[str, dict[str, Any] | None]] = []

    def __len__(self) -> int:
        """How many responses :meth:`send` will return (notifications take no slot)."""
        return len(self._requests)

    def request(self, method: str, params: Mapping[str, Any] | None = None) -> BatchBuilder:
        """Any request, by method name."""
        self._requests.append((method, dict(params or {})))
        return self

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> BatchBuilder:
        """A notification: sent with the batch, answered by nothing, given no slot."""
        self._notifications.append((method, dict(params) if params is not None else None))
        return self

    def list_tools(self, cursor: str | None = None) -> BatchBuilder:
        return self.request("tools/list", cursor_params(cursor))

    def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> BatchBuilder:
        return self.request("tools/call", {"name": name, "arguments": dict(arguments or {})})

    def list_resources(self, cursor: str | None = None) -> BatchBuilder:
        return self.request("resources/list", cursor_params(cursor))

    def read_resource(self, uri: str) -> BatchBuilder:
        return self.request("resources/read", {"uri": uri})

    def list_resource_templates(self, cursor: str | None = None) -> BatchBuilder:
        return self.request("resources/templates/list", cursor_params(cursor))

    def list_prompts(self, cursor: str | None = None) -> BatchBuilder:
        return self.request("prompts/list", cursor_params(cursor))

    def get_prompt(self, name: str, arguments: Mapping[str, str] | None = None) -> BatchBuilder:
        return self.request("prompts/get", {"name": name, "arguments": dict(arguments or {})})

    def complete(
        self, ref: Mapping[str, Any], argument: Mapping[str, Any] | tuple[str, str]
    ) -> BatchBuilder:
        return self.request("completion/complete", complete_params(ref, argument))

    async def send(self) -> list[Response]:
        """Send everything; one :class:`Response` per request, in the order added. Cancelling
        the awaiting task (``asyncio.timeout`` around it included), or the client's
        ``timeout`` running out, cancels every request."""
        responses = await self._client._run(self._requests, self._notifications)
        for i, response in enumerate(responses):
            response.id = i
        return responses


def cursor_params(cursor: str | None) -> dict[str, Any]:
    """The params of a list request: the cursor of the page wanted, if any."""
    return {} if cursor is None else {"cursor": cursor}


def complete_params(
    ref: Mapping[str, Any], argument: Mapping[str, Any] | tuple[str, str]
) -> dict[str, Any]:
    """``completion/complete`` params; ``argument`` is ``(name, value)`` or a dict."""
    arg = (
        {"name": argument[0], "value": argument[1]}
        if isinstance(argument, tuple)
        else dict(argument)
    )
    return {"ref": dict(ref), "argument": arg}


def split_messages(
    items: Sequence[Mapping[str, Any]],
) -> tuple[list[tuple[str, dict[str, Any]]], list[Any], list[tuple[str, dict[str, Any] | None]]]:
    """Hand-built messages as (requests, their caller ids, notifications)."""
    requests: list[tuple[str, dict[str, Any]]] = []
    ids: list[Any] = []
    notifications: list[tuple[str, dict[str, Any] | None]] = []
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise TypeError(f"batch entry {index} is not a JSON-RPC message object: {item!r}")
        method = item.get("method")
        if not isinstance(method, str):
            raise ValueError(f"batch entry {index} has no method: {item!r}")
        params = item.get("params")
        if params is not None and not isinstance(params, Mapping):
            raise ValueError(f"batch entry {index}: params must be an object")
        if "id" in item:
            requests.append((method, dict(params or {})))
            ids.append(item["id"])
        else:
            notifications.append((method, dict(params) if params is not None else None))
    return requests, ids, notifications


__all__ = ["BatchBuilder", "Response"]
