"""Prompts: arguments from the signature, and rendering to ``prompts/get`` messages."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ValidationError

from jetmcp.core.call import Call
from jetmcp.errors import INVALID_PARAMS, McpError, internal_error
from jetmcp.protocol.content import one_block
from jetmcp.protocol.revisions import Revision
from jetmcp.server.access import check_scopes
from jetmcp.server.caching import CacheScope, check_hint
from jetmcp.server.context import Context
from jetmcp.server.schema import (
    build_arguments,
    component_name,
    doc_whole,
    signature,
    validation_message,
)
from jetmcp.server.tools import is_async_callable, normalize_icons

if TYPE_CHECKING:
    from jetmcp.server.app import Server

Role = Literal["user", "assistant"]


class Message:
    """One prompt message: ``content`` is a string, an ``Image``/``Audio`` or a content block."""

    __slots__ = ("content", "role")

    def __init__(self, content: Any, role: Role = "user") -> None:
        self.content = content
        self.role: Role = role


class UserMessage(Message):
    __slots__ = ()

    def __init__(self, content: Any) -> None:
        super().__init__(content, "user")


class AssistantMessage(Message):
    __slots__ = ()

    def __init__(self, content: Any) -> None:
        super().__init__(content, "assistant")


def _message(item: Any, revision: Revision) -> dict[str, Any]:
    if isinstance(item, Message):
        return {"role": item.role, "content": one_block(item.content, revision)}
    if isinstance(item, dict) and "role" in item and "content" in item:
        return {"role": item["role"], "content": one_block(item["content"], revision)}
    if isinstance(item, BaseModel) and hasattr(item, "role") and hasattr(item, "content"):
        dumped = item.model_dump(mode="json", by_alias=True, exclude_none=True)
        return {"role": dumped["role"], "content": one_block(dumped["content"], revision)}
    return {"role": "user", "content": one_block(item, revision)}


class Prompt:
    """A registered prompt."""

    __slots__ = (
        "arguments",
        "cache_scope",
        "description",
        "fn",
        "icons",
        "is_async",
        "listed_arguments",
        "meta",
        "name",
        "scopes",
        "title",
        "ttl_ms",
    )

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        icons: Any = None,
        meta: dict[str, Any] | None = None,
        ttl_ms: int | None = None,
        cache_scope: CacheScope | None = None,
        scopes: Iterable[str] | None = None,
    ) -> None:
        prompt_name = component_name(fn, name, "prompt")
        check_hint(ttl_ms, cache_scope)
        #: Caching hints for ``prompts/list`` (None: the server's defaults).
        self.ttl_ms = ttl_ms
        self.cache_scope: CacheScope | None = cache_scope
        self.fn = fn
        self.name: str = prompt_name
        self.title = title
        self.description: str = description if description is not None else doc_whole(fn) or ""
        self.arguments = build_arguments(fn, f"{prompt_name}Arguments", sig=signature(fn))
        self.icons = normalize_icons(icons)
        self.meta = meta
        self.is_async = is_async_callable(fn)
        #: The OAuth scopes a principal needs to see and get it (see :mod:`.access`).
        self.scopes = check_scopes(scopes)
        listed: list[dict[str, Any]] = []
        for arg in self.arguments.names:
            entry: dict[str, Any] = {"name": arg}
            described = self.arguments.descriptions.get(arg)
            if described is not None:
                entry["description"] = described
            entry["required"] = arg in self.arguments.required
            listed.append(entry)
        self.listed_arguments = listed

    def listing(self, revision: Revision) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": self.name}
        if revision.titles and self.title is not None:
            entry["title"] = self.title
        entry["description"] = self.description
        entry["arguments"] = self.listed_arguments
        if revision.icons and self.icons:
            entry["icons"] = self.icons
        if revision.definition_meta and self.meta:
            entry["_meta"] = self.meta
        return entry

    async def get(self, arguments: dict[str, Any], call: Call, server: Server) -> dict[str, Any]:
        """The ``prompts/get`` result: ``description`` and ``messages``."""
        missing = [name for name in self.arguments.required if name not in arguments]
        if missing:
            raise McpError(
                INVALID_PARAMS,
                f"Missing required arguments for prompt {self.name}: {', '.join(missing)}",
            )
        try:
            kwargs = self.arguments.validate(arguments)
        except ValidationError as exc:
            raise McpError(
                INVALID_PARAMS,
                f"Invalid arguments for prompt {self.name}: {validation_message(exc)}",
            ) from exc
        if self.arguments.context_param is not None:
            kwargs[self.arguments.context_param] = Context(call, server)
        try:
            value = await self.fn(**kwargs) if self.is_async else self.fn(**kwargs)
            items = value if isinstance(value, list | tuple) else [value]
            messages = [_message(item, call.revision) for item in items]
        except McpError:
            raise
        except Exception as exc:
            raise internal_error(
                f"Error rendering prompt {self.name}", exc, server.mask_error_details
            ) from exc
        result: dict[str, Any] = {}
        if self.description:
            result["description"] = self.description
        result["messages"] = messages
        return result


__all__ = ["AssistantMessage", "Message", "Prompt", "UserMessage"]
