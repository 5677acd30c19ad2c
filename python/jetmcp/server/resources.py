"""Resources: static URIs and RFC 6570 templates, and reading them."""

from __future__ import annotations

import base64
import re
import typing
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from pydantic import BaseModel, ValidationError

from jetmcp.core.call import Call
from jetmcp.errors import INVALID_PARAMS, McpError, internal_error
from jetmcp.protocol.content import to_json_text
from jetmcp.protocol.revisions import Revision
from jetmcp.server.access import check_scopes
from jetmcp.server.caching import CacheScope, check_hint
from jetmcp.server.context import Context, ResourceContents
from jetmcp.server.schema import (
    Arguments,
    build_arguments,
    component_name,
    doc_whole,
    signature,
    validation_message,
)
from jetmcp.server.tools import is_async_callable, normalize_icons, normalize_object

if TYPE_CHECKING:
    from jetmcp.server.app import Server

_EXPRESSION = re.compile(r"\{([^{}]*)\}")
_VARNAME = re.compile(r"[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*")


class UriTemplate:
    """The matching half of an RFC 6570 template, for ``{var}`` (one path segment,
    percent-decoded) and ``{+var}`` (reserved expansion: any characters, slashes too)."""

    __slots__ = ("_reserved", "names", "pattern", "template")

    def __init__(self, template: str) -> None:
        self.template = template
        names: list[str] = []
        regex = ["^"]
        reserved: list[bool] = []
        pos = 0
        for match in _EXPRESSION.finditer(template):
            regex.append(re.escape(template[pos : match.start()]))
            expr = match.group(1)
            is_reserved = expr.startswith("+")
            name = expr[1:] if is_reserved else expr
            if not _VARNAME.fullmatch(name):
                raise ValueError(
                    f"unsupported URI template expression {{{expr}}} in {template!r}: "
                    "only {name} and {+name} are supported"
                )
            if name in names:
                raise ValueError(f"variable {name!r} appears twice in {template!r}")
            names.append(name)
            reserved.append(is_reserved)
            regex.append("(.+?)" if is_reserved else "([^/?#]+)")
            pos = match.end()
        tail = template[pos:]
        if "{" in tail or "}" in tail:
            raise ValueError(f"unbalanced braces in URI template {template!r}")
        regex.append(re.escape(tail))
        regex.append("$")
        self.names = tuple(names)
        self.pattern = re.compile("".join(regex))
        self._reserved = tuple(reserved)

    @staticmethod
    def is_template(uri: str) -> bool:
        return _EXPRESSION.search(uri) is not None

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables of ``uri`` when it matches, else None."""
        found = self.pattern.match(uri)
        if found is None:
            return None
        return {
            name: value if reserved else unquote(value)
            for name, value, reserved in zip(
                self.names, found.groups(), self._reserved, strict=True
            )
        }


def _guess_mime(return_annotation: Any) -> str | None:
    base = return_annotation
    while typing.get_origin(base) is typing.Annotated:
        base = typing.get_args(base)[0]
    origin = typing.get_origin(base) or base
    if base is str:
        return "text/plain"
    if base is bytes or base is bytearray:
        return "application/octet-stream"
    if origin in (dict, list) or (isinstance(base, type) and issubclass(base, BaseModel)):
        return "application/json"
    return None


def _contents(value: Any, mime_type: str | None) -> ResourceContents:
    if isinstance(value, str):
        return ResourceContents(value, mime_type or "text/plain")
    if isinstance(value, bytes | bytearray | memoryview):
        return ResourceContents(bytes(value), mime_type or "application/octet-stream")
    return ResourceContents(to_json_text(value), mime_type or "application/json")


def contents_to_wire(
    uri: str, item: ResourceContents, revision: Revision, meta: dict[str, Any] | None
) -> dict[str, Any]:
    entry: dict[str, Any] = {"uri": uri}
    if item.mime_type is not None:
        entry["mimeType"] = item.mime_type
    if revision.definition_meta and meta:
        entry["_meta"] = meta
    if isinstance(item.content, str):
        entry["text"] = item.content
    else:
        entry["blob"] = base64.b64encode(item.content).decode("ascii")
    return entry


class _ResourceBase:
    """What static resources and templates share: metadata and calling the function."""

    __slots__ = (
        "annotations",
        "arguments",
        "cache_scope",
        "description",
        "fn",
        "icons",
        "is_async",
        "meta",
        "mime_type",
        "name",
        "scopes",
        "title",
        "ttl_ms",
    )

    def __init__(
        self,
        fn: Callable[..., Any],
        arguments: Arguments,
        return_annotation: Any,
        *,
        name: str | None,
        title: str | None,
        description: str | None,
        mime_type: str | None,
        icons: Any,
        annotations: Any,
        meta: dict[str, Any] | None,
        ttl_ms: int | None = None,
        cache_scope: CacheScope | None = None,
        scopes: Iterable[str] | None = None,
    ) -> None:
        resource_name = component_name(fn, name, "resource")
        check_hint(ttl_ms, cache_scope)
        #: Caching hints for listing and reading it (None: the server's defaults).
        self.ttl_ms = ttl_ms
        self.cache_scope: CacheScope | None = cache_scope
        self.fn = fn
        self.arguments = arguments
        self.name: str = resource_name
        self.title = title
        self.description: str = description if description is not None else doc_whole(fn) or ""
        self.mime_type = mime_type or _guess_mime(return_annotation)
        self.icons = normalize_icons(icons)
        self.annotations = normalize_object(annotations, "resource annotations")
        self.meta = meta
        self.is_async = is_async_callable(fn)
        #: The OAuth scopes a principal needs to see and read it (see :mod:`.access`).
        self.scopes = check_scopes(scopes)

    def _describe(self, entry: dict[str, Any], revision: Revision) -> dict[str, Any]:
        entry["description"] = self.description
        if self.mime_type is not None:
            entry["mimeType"] = self.mime_type
        if revision.icons and self.icons:
            entry["icons"] = self.icons
        if self.annotations:
            entry["annotations"] = self.annotations
        if revision.definition_meta and self.meta:
            entry["_meta"] = self.meta
        return entry

    def _head(self, revision: Revision) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": self.name}
        if revision.titles and self.title is not None:
            entry["title"] = self.title
        return entry

    async def _run(
        self, uri: str, kwargs: dict[str, Any], call: Call, server: Server
    ) -> ResourceContents:
        if self.arguments.context_param is not None:
            kwargs[self.arguments.context_param] = Context(call, server)
        try:
            value = await self.fn(**kwargs) if self.is_async else self.fn(**kwargs)
        except McpError:
            raise
        except Exception as exc:
            raise internal_error(
                f"Error reading resource {uri}", exc, server.mask_error_details, {"uri": uri}
            ) from exc
        return _contents(value, self.mime_type)


class Resource(_ResourceBase):
    """A resource at a fixed URI."""

    __slots__ = ("uri",)

    def __init__(self, fn: Callable[..., Any], uri: str, **kw: Any) -> None:
        sig = signature(fn)
        arguments = build_arguments(fn, f"{getattr(fn, '__name__', 'resource')}Arguments", sig=sig)
        if arguments.required:
            raise TypeError(
                f"resource {uri!r} has no URI template variables, but its function requires "
                f"parameters {list(arguments.required)}"
            )
        super().__init__(fn, arguments, sig.return_annotation, **kw)
        self.uri = uri

    def listing(self, revision: Revision) -> dict[str, Any]:
        entry = self._head(revision)
        entry["uri"] = self.uri
        return self._describe(entry, revision)

    async def read(self, uri: str, call: Call, server: Server) -> ResourceContents:
        return await self._run(uri, {}, call, server)


class ResourceTemplate(_ResourceBase):
    """Resources whose URIs match an RFC 6570 template; the variables are the function's
    arguments (validated, so ``{id}`` can feed an ``id: int`` parameter)."""

    __slots__ = ("template",)

    def __init__(self, fn: Callable[..., Any], uri_template: str, **kw: Any) -> None:
        template = UriTemplate(uri_template)
        sig = signature(fn)
        arguments = build_arguments(fn, f"{getattr(fn, '__name__', 'template')}Arguments", sig=sig)
        unknown = [n for n in template.names if n not in arguments.names]
        missing = [n for n in arguments.required if n not in template.names]
        if unknown or missing:
            raise TypeError(
                f"URI template {uri_template!r} and the parameters of its function disagree: "
                f"template variables {list(template.names)}, parameters {list(arguments.names)}"
            )
        super().__init__(fn, arguments, sig.return_annotation, **kw)
        self.template = template

    @property
    def uri_template(self) -> str:
        return self.template.template

    def listing(self, revision: Revision) -> dict[str, Any]:
        entry = self._head(revision)
        entry["uriTemplate"] = self.template.template
        return self._describe(entry, revision)

    async def read(
        self, uri: str, variables: dict[str, str], call: Call, server: Server
    ) -> ResourceContents:
        try:
            kwargs = self.arguments.validate(variables)
        except ValidationError as exc:
            raise McpError(
                INVALID_PARAMS,
                f"Invalid URI for {self.template.template}: {validation_message(exc)}",
                data={"uri": uri},
            ) from exc
        return await self._run(uri, kwargs, call, server)


__all__ = ["Resource", "ResourceTemplate", "UriTemplate", "contents_to_wire"]
