"""Content blocks, where servers have imported them from: they live in
:mod:`jetmcp.protocol.content` (the ``Image``/``Audio`` helpers and turning return values into
blocks depend on the revision only)."""

from __future__ import annotations

from jetmcp.protocol.content import (
    CONTENT_TYPES,
    Audio,
    EmbeddedResource,
    Image,
    ResourceLink,
    content_blocks,
    fit_block,
    is_content,
    is_content_type,
    one_block,
    text_block,
    to_json_text,
    to_jsonable,
)

__all__ = [
    "CONTENT_TYPES",
    "Audio",
    "EmbeddedResource",
    "Image",
    "ResourceLink",
    "content_blocks",
    "fit_block",
    "is_content",
    "is_content_type",
    "one_block",
    "text_block",
    "to_json_text",
    "to_jsonable",
]
