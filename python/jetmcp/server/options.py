"""A tool's options, declared once: :class:`ToolOptions` (what a tool was registered with,
its defaults and the checks on them) and :class:`ToolKeywords` (the same names as the
keywords ``@server.tool``, ``Server.add_tool`` and ``Tool`` take, for type checkers).

Every place that takes tool options takes ``**options: Unpack[ToolKeywords]`` and passes
them on untouched; :class:`~jetmcp.server.tools.Tool` reads them through
``ToolOptions(**options)``, which refuses an unknown name (``TypeError``) or a bad value
(``ValueError``). A new option is a field here (with its default and check) and a key of
:class:`ToolKeywords`, nothing more: an import-time check holds the two to the same names.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from enum import Enum
from typing import Any, Final, Literal, TypedDict

from jetmcp.server.caching import CacheScope, check_hint

TaskSupport = Literal["forbidden", "optional", "required"]
TASK_SUPPORT: tuple[TaskSupport, ...] = ("forbidden", "optional", "required")


class _NotSet(Enum):
    NOT_SET = "NOT_SET"


#: ``output_schema``'s default: the schema comes from the return annotation (None means
#: none at all, as fastmcp's ``NotSet`` and None do).
NOT_SET: Final = _NotSet.NOT_SET
NotSet = Literal[_NotSet.NOT_SET]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolOptions:
    """What a tool is registered with (see ``Server.tool`` for what each option does)."""

    #: The tool's name (default: the function's).
    name: str | None = None
    title: str | None = None
    #: Default: the docstring's first paragraph.
    description: str | None = None
    annotations: Any = None
    icons: list[Any] | None = None
    meta: dict[str, Any] | None = None
    #: False: no output schema, no ``structuredContent``; None: from the return annotation.
    structured_output: bool | None = None
    task_support: TaskSupport = "forbidden"
    #: Published verbatim instead of the signature's schema.
    input_schema: dict[str, Any] | None = None
    defer_task: bool = False
    ttl_ms: int | None = None
    cache_scope: CacheScope | None = None
    #: Seconds a call may wait (None: the server's request timeout).
    timeout: float | None = None
    scopes: Iterable[str] | None = None
    #: A synchronous function in the thread pool (True), inline (False), or inline once
    #: measured fast (None: :mod:`jetmcp.core.threads`).
    run_in_thread: bool | None = None
    #: fastmcp's: labels listed under ``_meta.fastmcp.tags``, which the server's
    #: ``include_tags``/``exclude_tags`` filter on.
    tags: Iterable[str] | None = None
    #: fastmcp's: False keeps the tool out of listings and calls until ``tool.enable()``.
    enabled: bool = True
    #: fastmcp's: parameters left out of the input schema (each must have a default, which
    #: every call then gets).
    exclude_args: Iterable[str] | None = None
    #: fastmcp's: a JSON schema published instead of the return annotation's (an object
    #: schema), or None for no output schema at all.
    output_schema: dict[str, Any] | NotSet | None = NOT_SET

    def __post_init__(self) -> None:
        run_in_thread = self.run_in_thread
        if run_in_thread is not None and not isinstance(run_in_thread, bool):
            raise ValueError(f"run_in_thread must be True, False or None, not {run_in_thread!r}")
        timeout = self.timeout
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0
        ):
            raise ValueError(f"timeout must be a number of seconds above 0, not {timeout!r}")
        if self.task_support not in TASK_SUPPORT:
            raise ValueError(
                f"task_support must be one of {TASK_SUPPORT}, not {self.task_support!r}"
            )
        schema = self.input_schema
        if schema is not None and (not isinstance(schema, dict) or schema.get("type") != "object"):
            raise ValueError('an input_schema must be a dict with "type": "object"')
        check_hint(self.ttl_ms, self.cache_scope)
        if self.defer_task and self.task_support == "forbidden":
            raise ValueError("defer_task needs task_support 'optional' or 'required'")
        if not isinstance(self.enabled, bool):
            raise ValueError(f"enabled must be True or False, not {self.enabled!r}")
        for what, names in (("tags", self.tags), ("exclude_args", self.exclude_args)):
            if names is not None and (
                isinstance(names, str) or not all(isinstance(n, str) for n in names)
            ):
                raise ValueError(f"{what} must be a collection of strings, not {names!r}")
        output_schema = self.output_schema
        if output_schema is not NOT_SET and output_schema is not None:
            if not isinstance(output_schema, dict) or output_schema.get("type") != "object":
                raise ValueError('an output_schema must be a dict with "type": "object", or None')
            if self.structured_output is False:
                raise ValueError("output_schema and structured_output=False contradict")


class ToolKeywords(TypedDict, total=False):
    """The fields of :class:`ToolOptions` as keywords (``**options: Unpack[ToolKeywords]``)."""

    name: str | None
    title: str | None
    description: str | None
    annotations: Any
    icons: list[Any] | None
    meta: dict[str, Any] | None
    structured_output: bool | None
    task_support: TaskSupport
    input_schema: dict[str, Any] | None
    defer_task: bool
    ttl_ms: int | None
    cache_scope: CacheScope | None
    timeout: float | None
    scopes: Iterable[str] | None
    run_in_thread: bool | None
    tags: Iterable[str] | None
    enabled: bool
    exclude_args: Iterable[str] | None
    output_schema: dict[str, Any] | NotSet | None


def _same_names() -> None:
    declared = [f.name for f in fields(ToolOptions)]
    typed = list(ToolKeywords.__annotations__)
    if declared != typed:  # pragma: no cover - a mistake made while adding an option
        raise TypeError(f"ToolKeywords {typed} must name ToolOptions' fields {declared}")


_same_names()

__all__ = ["NOT_SET", "TASK_SUPPORT", "NotSet", "TaskSupport", "ToolKeywords", "ToolOptions"]
