"""The typed results and handler messages of the client.

Every model keeps the fields it does not name: they stay readable as attributes under their
wire names (``result.someNewField``, and in ``model_extra``), and :meth:`McpModel.to_dict`
writes them back, so a server's newer fields are never lost. Python names are snake_case;
the wire names (camelCase, ``_meta``) are the aliases, and both are accepted when a model is
built by hand.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag
from pydantic.alias_generators import to_camel


class McpModel(BaseModel):
    """Base of every client model: camelCase on the wire, unknown fields kept."""

    model_config = ConfigDict(
        extra="allow", populate_by_name=True, alias_generator=to_camel, frozen=False
    )

    def to_dict(self) -> dict[str, Any]:
        """The wire form: aliases, unset optional fields left out, unknown fields kept."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


class Result(McpModel):
    """Fields every result may carry."""

    meta: dict[str, Any] | None = Field(default=None, alias="_meta")
    #: 2026-07-28: ``"complete"``, ``"input_required"`` (handled by the client), or an
    #: extension's value; None on older revisions.
    result_type: str | None = None


class CacheableResult(Result):
    """2026-07-28 caching hints (None on older revisions)."""

    ttl_ms: int | None = None
    cache_scope: str | None = None


class PaginatedResult(CacheableResult):
    next_cursor: str | None = None


class EmptyResult(Result):
    """A result with nothing in it (``ping``)."""


# --------------------------------------------------------------------------- identity


class Implementation(McpModel):
    name: str
    version: str = ""
    title: str | None = None


class InitializeResult(Result):
    protocol_version: str
    capabilities: dict[str, Any] = Field(default_factory=dict)
    server_info: Implementation
    instructions: str | None = None


class DiscoverResult(CacheableResult):
    supported_versions: list[str] = Field(default_factory=list)
    capabilities: dict[str, Any] = Field(default_factory=dict)
    instructions: str | None = None


# --------------------------------------------------------------------------- content


class Annotations(McpModel):
    audience: list[str] | None = None
    priority: float | None = None


class TextResourceContents(McpModel):
    uri: str
    mime_type: str | None = None
    text: str
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class BlobResourceContents(McpModel):
    uri: str
    mime_type: str | None = None
    blob: str
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


def _contents_tag(value: Any) -> str:
    has = value.__contains__ if isinstance(value, dict) else lambda k: hasattr(value, k)
    return "blob" if has("blob") and not has("text") else "text"


ResourceContents = Annotated[
    Annotated[TextResourceContents, Tag("text")] | Annotated[BlobResourceContents, Tag("blob")],
    Discriminator(_contents_tag),
]


class TextContent(McpModel):
    type: Literal["text"] = "text"
    text: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class ImageContent(McpModel):
    type: Literal["image"] = "image"
    data: str
    mime_type: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class AudioContent(McpModel):
    type: Literal["audio"] = "audio"
    data: str
    mime_type: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class ResourceLink(McpModel):
    type: Literal["resource_link"] = "resource_link"
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class EmbeddedResource(McpModel):
    type: Literal["resource"] = "resource"
    resource: ResourceContents
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class UnknownContent(McpModel):
    """A content block of a type this client does not know; its fields stay as extras."""

    type: str


_CONTENT_TYPES = frozenset({"text", "image", "audio", "resource_link", "resource"})


def _content_tag(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if kind in _CONTENT_TYPES else "unknown"


Content = Annotated[
    Annotated[TextContent, Tag("text")]
    | Annotated[ImageContent, Tag("image")]
    | Annotated[AudioContent, Tag("audio")]
    | Annotated[ResourceLink, Tag("resource_link")]
    | Annotated[EmbeddedResource, Tag("resource")]
    | Annotated[UnknownContent, Tag("unknown")],
    Discriminator(_content_tag),
]


def _text_of(content: list[Any]) -> str:
    return "".join(block.text for block in content if isinstance(block, TextContent))


# --------------------------------------------------------------------------- tools


class Tool(McpModel):
    name: str
    title: str | None = None
    description: str | None = None
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class ListToolsResult(PaginatedResult):
    tools: list[Tool] = Field(default_factory=list)


class CallToolResult(Result):
    content: list[Content] = Field(default_factory=list)
    structured_content: Any = None
    is_error: bool = False

    @property
    def text(self) -> str:
        """The text blocks of ``content``, joined."""
        return _text_of(self.content)


# --------------------------------------------------------------------------- resources


class Resource(McpModel):
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: Annotations | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class ResourceTemplate(McpModel):
    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: Annotations | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class ListResourcesResult(PaginatedResult):
    resources: list[Resource] = Field(default_factory=list)


class ListResourceTemplatesResult(PaginatedResult):
    resource_templates: list[ResourceTemplate] = Field(default_factory=list)


class ReadResourceResult(CacheableResult):
    contents: list[ResourceContents] = Field(default_factory=list)

    @property
    def text(self) -> str:
        """The text contents, joined."""
        return "".join(c.text for c in self.contents if isinstance(c, TextResourceContents))


# --------------------------------------------------------------------------- prompts


class PromptArgument(McpModel):
    name: str
    title: str | None = None
    description: str | None = None
    required: bool | None = None


class Prompt(McpModel):
    name: str
    title: str | None = None
    description: str | None = None
    arguments: list[PromptArgument] | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class ListPromptsResult(PaginatedResult):
    prompts: list[Prompt] = Field(default_factory=list)


class PromptMessage(McpModel):
    role: str
    content: Content


class GetPromptResult(Result):
    description: str | None = None
    messages: list[PromptMessage] = Field(default_factory=list)


# --------------------------------------------------------------------------- completion


class Completion(McpModel):
    values: list[str] = Field(default_factory=list)
    total: int | None = None
    has_more: bool | None = None


class CompleteResult(Result):
    completion: Completion = Field(default_factory=Completion)


# --------------------------------------------------------------------------- MRTR


class InputRequest(McpModel):
    """One entry of an ``InputRequiredResult``: a server-to-client request to answer."""

    method: str
    params: dict[str, Any] = Field(default_factory=dict)


class InputRequiredResult(Result):
    """2026-07-28: the server needs answers (``inputRequests``) before it can finish."""

    input_requests: dict[str, InputRequest] | None = None
    request_state: str | None = None


# --------------------------------------------------------------------------- handlers


class ElicitRequestParams(McpModel):
    """What ``elicitation/create`` asks (form mode: ``requested_schema``; URL mode: ``url``)."""

    message: str = ""
    mode: str | None = None
    requested_schema: dict[str, Any] | None = None
    url: str | None = None
    elicitation_id: str | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class ElicitResult(McpModel):
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


class SamplingMessage(McpModel):
    role: str
    content: Any


class CreateMessageRequestParams(McpModel):
    """What ``sampling/createMessage`` asks."""

    messages: list[SamplingMessage] = Field(default_factory=list)
    max_tokens: int = 0
    system_prompt: str | None = None
    model_preferences: dict[str, Any] | None = None
    include_context: str | None = None
    temperature: float | None = None
    stop_sequences: list[str] | None = None
    tools: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class CreateMessageResult(McpModel):
    role: str = "assistant"
    content: Any
    model: str
    stop_reason: str | None = None


class Root(McpModel):
    uri: str
    name: str | None = None


class ListRootsResult(Result):
    roots: list[Root] = Field(default_factory=list)


__all__ = [
    "Annotations",
    "AudioContent",
    "BlobResourceContents",
    "CallToolResult",
    "CompleteResult",
    "Completion",
    "Content",
    "CreateMessageRequestParams",
    "CreateMessageResult",
    "DiscoverResult",
    "ElicitRequestParams",
    "ElicitResult",
    "EmbeddedResource",
    "EmptyResult",
    "GetPromptResult",
    "ImageContent",
    "Implementation",
    "InitializeResult",
    "InputRequest",
    "InputRequiredResult",
    "ListPromptsResult",
    "ListResourceTemplatesResult",
    "ListResourcesResult",
    "ListRootsResult",
    "ListToolsResult",
    "McpModel",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "ReadResourceResult",
    "Resource",
    "ResourceContents",
    "ResourceLink",
    "ResourceTemplate",
    "Result",
    "Root",
    "SamplingMessage",
    "TextContent",
    "TextResourceContents",
    "Tool",
    "UnknownContent",
]
