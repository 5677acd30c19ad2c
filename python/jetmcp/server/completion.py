"""``completion/complete``: argument suggestions for prompts and resource templates.

One handler per server, registered with ``@server.completion()`` as in the official SDK's
``FastMCP``/``MCPServer``::

    @server.completion()
    async def complete(ref, argument, context):
        if isinstance(ref, PromptReference) and argument.name == "language":
            return [lang for lang in LANGUAGES if lang.startswith(argument.value)]
        return None

The handler gets ``ref`` (:class:`PromptReference` or :class:`ResourceTemplateReference`),
``argument`` (:class:`CompletionArgument`: ``name``, ``value``) and ``context``
(:class:`CompletionContext` with the already resolved ``arguments``, or None: clients send
it from 2025-06-18 on). It may be sync or async and returns a list of strings, a
:class:`Completion`, a dict in wire form, an object with ``values`` (the SDK's
``Completion``), or None for no suggestions.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from jetmcp.core.call import Call, Result
from jetmcp.errors import INVALID_PARAMS, McpError, internal_error

log = logging.getLogger("jetmcp")

#: The most values one ``completion/complete`` result may carry.
MAX_VALUES = 100


class _SdkTwin(type):
    """Makes ``isinstance`` true for the official SDK's class of the same name too: the
    handler gets the SDK's objects when an SDK is installed (so ``isinstance(ref,
    mcp.types.PromptReference)`` holds, as on the SDK), and checks written against jetmcp's
    classes keep working."""

    def __instancecheck__(cls, obj: Any) -> bool:
        if type.__instancecheck__(cls, obj):
            return True
        kind = type(obj)
        return kind.__name__ == cls.__name__ and kind.__module__.startswith(("mcp", "mcp_types"))


def _twin_eq(self: Any, other: Any) -> bool:
    """Equal to the same object of jetmcp's class or of the SDK's twin, field by field."""
    if not isinstance(other, type(self)):
        return NotImplemented  # type: ignore[no-any-return]
    return all(getattr(self, f.name) == getattr(other, f.name, None) for f in fields(self))


def _twin_hash(self: Any) -> int:
    return hash(tuple(getattr(self, f.name) for f in fields(self)))


@dataclass(frozen=True, slots=True, eq=False)
class PromptReference(metaclass=_SdkTwin):
    """``ref/prompt``: completing an argument of the prompt ``name``."""

    name: str
    type: Literal["ref/prompt"] = "ref/prompt"


@dataclass(frozen=True, slots=True, eq=False)
class ResourceTemplateReference(metaclass=_SdkTwin):
    """``ref/resource``: completing a variable of the resource template (or URI) ``uri``."""

    uri: str
    type: Literal["ref/resource"] = "ref/resource"


_twin: type
for _twin in (PromptReference, ResourceTemplateReference):
    _twin.__eq__ = _twin_eq  # type: ignore[method-assign]
    _twin.__hash__ = _twin_hash  # type: ignore[method-assign]

#: The official SDK's older name for the resource reference.
ResourceReference = ResourceTemplateReference


@dataclass(frozen=True, slots=True, eq=False)
class CompletionArgument(metaclass=_SdkTwin):
    """The argument being completed and what the user typed so far."""

    name: str
    value: str


@dataclass(frozen=True, slots=True, eq=False)
class CompletionContext(metaclass=_SdkTwin):
    """Arguments already resolved (2025-06-18 on)."""

    arguments: dict[str, str] = field(default_factory=dict)


for _twin in (CompletionArgument, CompletionContext):
    _twin.__eq__ = _twin_eq  # type: ignore[method-assign]
    _twin.__hash__ = _twin_hash  # type: ignore[method-assign]


@dataclass(slots=True)
class Completion:
    """Suggestions: at most 100 ``values`` are sent; ``total`` and ``has_more`` are optional
    (filled in when more than 100 values are given)."""

    values: list[str]
    total: int | None = None
    has_more: bool | None = None


CompletionHandler = Callable[
    [PromptReference | ResourceTemplateReference, CompletionArgument, CompletionContext | None],
    Any,
]


def _str(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise McpError(INVALID_PARAMS, f"Invalid params: completion/complete needs {what}")
    return value


def parse_params(
    params: dict[str, Any], call: Call
) -> tuple[
    PromptReference | ResourceTemplateReference, CompletionArgument, CompletionContext | None
]:
    """The handler's arguments from ``completion/complete`` params (-32602 when malformed)."""
    ref = params.get("ref")
    if not isinstance(ref, dict):
        raise McpError(INVALID_PARAMS, "Invalid params: completion/complete needs a ref object")
    kind = ref.get("type")
    parsed_ref: PromptReference | ResourceTemplateReference
    if kind == "ref/prompt":
        parsed_ref = PromptReference(_str(ref.get("name"), "ref.name"))
    elif kind == "ref/resource":
        parsed_ref = ResourceTemplateReference(_str(ref.get("uri"), "ref.uri"))
    else:
        raise McpError(INVALID_PARAMS, f"Invalid params: unknown completion ref type {kind!r}")
    argument = params.get("argument")
    if not isinstance(argument, dict):
        raise McpError(INVALID_PARAMS, "Invalid params: completion/complete needs an argument")
    parsed_argument = CompletionArgument(
        _str(argument.get("name"), "argument.name"), _str(argument.get("value"), "argument.value")
    )
    context: CompletionContext | None = None
    raw_context = params.get("context")
    if call.revision.completion_context and isinstance(raw_context, dict):
        arguments = raw_context.get("arguments")
        context = CompletionContext(
            {k: v for k, v in arguments.items() if isinstance(v, str)}
            if isinstance(arguments, dict)
            else {}
        )
    return parsed_ref, parsed_argument, context


def _values(raw: Any) -> list[str]:
    if not isinstance(raw, list | tuple):
        raise TypeError(f"completion values must be a list of strings, not {type(raw).__name__}")
    return [str(v) for v in raw]


def to_wire(value: Any) -> dict[str, Any]:
    """The ``completion`` object for a handler's return value."""
    total: Any = None
    has_more: Any = None
    if value is None:
        values: list[str] = []
    elif isinstance(value, Completion):
        values, total, has_more = _values(value.values), value.total, value.has_more
    elif isinstance(value, dict):
        values = _values(value.get("values", []))
        total, has_more = value.get("total"), value.get("hasMore", value.get("has_more"))
    elif isinstance(value, list | tuple):
        values = _values(value)
    elif hasattr(value, "values") and not callable(value.values):
        values = _values(value.values)
        total, has_more = getattr(value, "total", None), getattr(value, "has_more", None)
    else:
        raise TypeError(f"cannot turn {type(value).__name__} into completion values")
    if len(values) > MAX_VALUES:
        if total is None:
            total = len(values)
        values = values[:MAX_VALUES]
        has_more = True
    out: dict[str, Any] = {"values": values}
    if total is not None:
        out["total"] = int(total)
    if has_more is not None:
        out["hasMore"] = bool(has_more)
    return out


def complete(
    handler: CompletionHandler,
    ref: PromptReference | ResourceTemplateReference,
    argument: CompletionArgument,
    context: CompletionContext | None,
    mask: bool = True,
) -> Result:
    """The ``completion/complete`` result from ``handler`` (an awaitable when it is async).
    A failing handler is an internal error (-32603), as in the official SDK, its text shown
    only when ``mask`` is off. The handler gets the SDK's objects when an SDK is installed
    (:func:`_as_sdk`)."""
    try:
        value = handler(*_as_sdk(ref, argument, context))
    except McpError:
        raise
    except Exception as exc:
        raise _failed(argument, exc, mask) from exc
    if inspect.isawaitable(value):
        return _finish(value, argument, mask)
    return _result(value, argument, mask)


def _as_sdk(
    ref: PromptReference | ResourceTemplateReference,
    argument: CompletionArgument,
    context: CompletionContext | None,
) -> tuple[Any, Any, Any]:
    """The handler's arguments as the official SDK's models (``mcp.types``) when an SDK is
    installed, else as they are."""
    from jetmcp.server.sdk_context import sdk_types

    types = sdk_types()
    if types is None:
        return ref, argument, context
    try:
        if isinstance(ref, PromptReference):
            sdk_ref = types.PromptReference(type="ref/prompt", name=ref.name)
        else:
            sdk_ref = types.ResourceTemplateReference(type="ref/resource", uri=ref.uri)
        sdk_argument = types.CompletionArgument(name=argument.name, value=argument.value)
        sdk_context = (
            None if context is None else types.CompletionContext(arguments=context.arguments)
        )
    except Exception:  # an SDK whose models differ: jetmcp's own objects
        return ref, argument, context
    return sdk_ref, sdk_argument, sdk_context


def _failed(argument: CompletionArgument, exc: Exception, mask: bool) -> McpError:
    return internal_error(f"Error completing argument {argument.name}", exc, mask)


def _result(value: Any, argument: CompletionArgument, mask: bool) -> dict[str, Any]:
    try:
        return {"completion": to_wire(value)}
    except TypeError as exc:
        raise _failed(argument, exc, mask) from exc


async def _finish(
    pending: Awaitable[Any], argument: CompletionArgument, mask: bool
) -> dict[str, Any]:
    try:
        value = await pending
    except McpError:
        raise
    except Exception as exc:
        raise _failed(argument, exc, mask) from exc
    return _result(value, argument, mask)


__all__ = [
    "MAX_VALUES",
    "Completion",
    "CompletionArgument",
    "CompletionContext",
    "CompletionHandler",
    "PromptReference",
    "ResourceReference",
    "ResourceTemplateReference",
    "complete",
    "parse_params",
    "to_wire",
]
