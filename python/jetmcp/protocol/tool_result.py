"""The ``tools/call`` result per revision, shaped once: :class:`ToolShaping` turns what a
tool's function returned (:meth:`~ToolShaping.shape`) or raised
(:meth:`~ToolShaping.failure`) into the result the revision knows, from what the tool
declared (its :class:`Output`, whether structured output is on, whether errors are masked).
:class:`~jetmcp.server.tools.Tool` is one (registration stays in ``server/``); the extension's
fast twins write the same bytes (the differential tests of ``tests/parity/``).

The parts that depend on nothing but the value and the revision are functions here too: an
error result, the text of an exception, and a result a tool returned whole (the official
SDK's ``CallToolResult``, fastmcp's ``ToolResult``). Content blocks are
:mod:`jetmcp.protocol.content`'s.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from jetmcp.errors import (
    URL_ELICITATION_REQUIRED,
    McpError,
    UrlElicitationError,
    from_sdk_error,
    is_tool_error,
)
from jetmcp.protocol.content import (
    content_blocks,
    is_content,
    text_block,
    to_json_text,
    to_jsonable,
)
from jetmcp.protocol.revisions import Revision

log = logging.getLogger("jetmcp")

#: The serializer's ``to_python`` keyword arguments for a declared model's structured
#: content (``model_dump(mode="json", by_alias=True)``).
STRUCTURED_DUMP: dict[str, Any] = {"mode": "json", "by_alias": True}


def error_result(text: str) -> dict[str, Any]:
    """A tool error: ``text`` as the only content block, ``isError: true``."""
    return {"content": [text_block(text)], "isError": True}


def exception_text(exc: BaseException) -> str:
    """What a tool error says of ``exc``: its message, else its class's name."""
    text = str(exc)
    return text if text else type(exc).__name__


def validation_message(error: ValidationError) -> str:
    """A one-line account of what is wrong with the arguments."""
    parts = []
    for item in error.errors(include_url=False):
        loc = ".".join(str(p) for p in item["loc"])
        parts.append(f"{loc}: {item['msg']}" if loc else str(item["msg"]))
    return "; ".join(parts)


def sdk_tool_result(value: Any) -> dict[str, Any] | None:
    """The result a tool returned whole: the SDK's ``CallToolResult`` (its ``isError`` and
    ``_meta`` kept) or fastmcp's ``ToolResult``; None for anything else."""
    names = {c.__name__ for c in type(value).__mro__}
    if "ToolResult" in names and hasattr(value, "to_mcp_result"):
        value = value.to_mcp_result()
        if isinstance(value, tuple) and len(value) == 2:
            return {
                "content": [to_jsonable(block) for block in value[0]],
                "structuredContent": value[1],
                "isError": False,
            }
        if isinstance(value, list):
            return {"content": [to_jsonable(block) for block in value], "isError": False}
        names = {c.__name__ for c in type(value).__mro__}
    if "CallToolResult" in names and hasattr(value, "model_dump"):
        dumped: dict[str, Any] = value.model_dump(by_alias=True, mode="json", exclude_none=True)
        return dumped
    return None


@dataclasses.dataclass(slots=True)
class Output:
    """A tool's declared output: the published ``outputSchema`` and how to build
    ``structuredContent`` from a return value (made by
    :func:`jetmcp.server.schema.build_output`)."""

    schema: dict[str, Any]
    #: The value goes under ``{"result": ...}`` (primitives, lists, unions...).
    wrap: bool
    adapter: TypeAdapter[Any]
    #: For wrapped primitives: values of exactly this type skip pydantic.
    fast_type: type | None

    def structured(self, value: Any) -> Any:
        """``structuredContent`` for ``value``; raises ``ValidationError`` on a mismatch."""
        if self.fast_type is not None and type(value) is self.fast_type:
            return {"result": value}
        if self.wrap:
            value = {"result": value}
        validated = self.adapter.validate_python(value)
        if isinstance(validated, BaseModel):
            return validated.model_dump(mode="json", by_alias=True)
        return self.adapter.dump_python(validated, mode="json", by_alias=True)


class ToolShaping:
    """How a tool's return values and exceptions become ``tools/call`` results, per revision.

    A class that holds the attributes below (as :class:`~jetmcp.server.tools.Tool` does)
    gets :meth:`shape` and :meth:`failure` from here; a subclass may shape its own way by
    overriding both (the extension then writes none of its results itself)."""

    __slots__ = ()

    #: The tool's name, as its errors say it.
    name: str
    #: The declared output (None: no ``outputSchema``).
    output: Output | None
    #: The tool's ``structured_output`` option (False: never ``structuredContent``).
    structured_output: bool | None
    #: The declared return model when an instance of exactly it may be written without the
    #: general path's checks (None: always the general path).
    model_out: type[BaseModel] | None
    #: Whether the primitive and exact-model shortcuts below may be taken.
    fast: bool
    #: Whether unexpected exceptions answer "Error executing tool NAME" only.
    mask_errors: bool

    def failure(self, exc: Exception, revision: Revision) -> dict[str, Any]:
        """The ``tools/call`` result for an exception the function raised: a result with
        ``isError: true``, except that an ``McpError`` (and a URL elicitation, where the
        revision has it) is raised again, to be answered as a JSON-RPC error."""
        if isinstance(exc, UrlElicitationError):
            if revision.url_elicitation:
                raise exc
            return error_result(exc.as_text())
        if isinstance(exc, McpError):
            raise exc
        sdk = from_sdk_error(exc)
        if sdk is not None:
            if sdk.code == URL_ELICITATION_REQUIRED and not revision.url_elicitation:
                return error_result(sdk.message)
            raise sdk
        if self.mask_errors and not is_tool_error(exc):
            log.error("tool %s raised", self.name, exc_info=exc)
            return error_result(f"Error executing tool {self.name}")
        return error_result(exception_text(exc))

    def _unsendable(self, what: str, exc: Exception) -> dict[str, Any]:
        """The tool error for a result that cannot be written (its detail only in the log
        when errors are masked)."""
        if self.mask_errors:
            log.error("tool %s %s", self.name, what, exc_info=exc)
            return error_result(f"Tool {self.name} {what}")
        return error_result(f"Tool {self.name} {what}: {exc}")

    def shape(self, value: Any, revision: Revision) -> dict[str, Any]:
        """The ``tools/call`` result for a return value."""
        kind = type(value)
        if self.fast and (kind is int or kind is str or kind is bool):
            # The usual primitive returns, shaped as the general path below would.
            output = self.output
            if output is None or output.fast_type is kind:
                try:
                    text = (
                        value
                        if kind is str
                        else str(value)
                        if kind is int
                        else ("true" if value else "false")
                    )
                except ValueError:  # an int too long for str(): the general path says so
                    pass
                else:
                    content = [{"type": "text", "text": text}]
                    if (
                        output is not None
                        and revision.structured_output
                        and self.structured_output is not False
                    ):
                        return {
                            "content": content,
                            "structuredContent": {"result": value},
                            "isError": False,
                        }
                    return {"content": content, "isError": False}
        if kind is self.model_out and self.fast:
            # The declared model itself: its JSON as the text, its dump as the structured
            # content, as below (validating an instance of exactly the class returns it).
            content = [text_block(to_json_text(value))]
            if revision.structured_output and self.structured_output is not False:
                try:
                    # model_dump's own call (the class keeps BaseModel's: see model_out).
                    dumped = kind.__pydantic_serializer__.to_python(value, **STRUCTURED_DUMP)
                except ValidationError as exc:
                    return error_result(
                        f"Tool {self.name} returned a value that does not match its output "
                        f"schema: {validation_message(exc)}"
                    )
                except Exception as exc:
                    return self._unsendable("returned a value that cannot be serialized", exc)
                return {"content": content, "structuredContent": dumped, "isError": False}
            return {"content": content, "isError": False}
        if kind is str:
            content = [text_block(value)]
        elif hasattr(value, "model_dump") or hasattr(value, "to_mcp_result"):
            whole = sdk_tool_result(value)
            if whole is not None:
                return whole
            content = content_blocks(value, revision)
        else:
            try:
                content = content_blocks(value, revision)
            except Exception as exc:
                return self._unsendable("returned content that cannot be sent", exc)
        if revision.structured_output and self.structured_output is not False:
            output = self.output
            structured: Any = None
            if output is not None:
                try:
                    structured = output.structured(value)
                except ValidationError as exc:
                    return error_result(
                        f"Tool {self.name} returned a value that does not match its output "
                        f"schema: {validation_message(exc)}"
                    )
                except Exception as exc:
                    return self._unsendable("returned a value that cannot be serialized", exc)
            elif isinstance(value, dict) or (
                isinstance(value, BaseModel) and not is_content(value)
            ):
                structured = to_jsonable(value)
            if structured is not None:
                return {"content": content, "structuredContent": structured, "isError": False}
        return {"content": content, "isError": False}


__all__ = [
    "STRUCTURED_DUMP",
    "Output",
    "ToolShaping",
    "error_result",
    "exception_text",
    "sdk_tool_result",
    "validation_message",
]
