"""Content blocks: the ``Image``/``Audio`` helpers and turning return values into blocks.

Blocks are plain dicts in wire form (camelCase keys). Objects from the official SDK
(``mcp.types.TextContent`` and friends, its ``Image``/``Audio`` helpers) are accepted too, so
tool code written against it moves over unchanged.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any, ClassVar

import pydantic_core
from pydantic import BaseModel

from jetmcp.protocol.revisions import Revision

_IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}
_AUDIO_TYPES = {
    ".wav": "audio/wav",
    ".mp3": "audio/mpeg",
    ".ogg": "audio/ogg",
    ".flac": "audio/flac",
    ".aac": "audio/aac",
    ".m4a": "audio/mp4",
}

#: The ``type`` of every content block MCP defines.
CONTENT_TYPES = frozenset({"text", "image", "audio", "resource", "resource_link"})


class _Media:
    """Binary media given by a file path or by bytes; read when shaped, not when built."""

    __slots__ = ("_format", "data", "mime_type", "path")
    _kind: ClassVar[str] = ""
    _default_mime: ClassVar[str] = ""
    _by_suffix: ClassVar[dict[str, str]] = {}

    def __init__(
        self, path: str | Path | None = None, data: bytes | None = None, format: str | None = None
    ) -> None:
        if (path is None) == (data is None):
            raise ValueError(f"{type(self).__name__} takes exactly one of path or data")
        self.path = Path(path) if path is not None else None
        self.data = data
        self._format = format
        if format:
            self.mime_type = f"{self._kind}/{format.lower()}"
        elif self.path is not None:
            self.mime_type = self._by_suffix.get(
                self.path.suffix.lower(), "application/octet-stream"
            )
        else:
            self.mime_type = self._default_mime

    def base64(self) -> str:
        raw = self.data if self.data is not None else Path(str(self.path)).read_bytes()
        return base64.b64encode(raw).decode("ascii")

    def to_content(self) -> dict[str, Any]:
        """The content block in wire form."""
        return {"type": self._kind, "data": self.base64(), "mimeType": self.mime_type}


class Image(_Media):
    """An image a tool or prompt returns: ``Image(path="chart.png")`` or ``Image(data=b"...")``.

    The MIME type comes from ``format`` (``"png"`` → ``image/png``), else the file suffix, else
    ``image/png``.
    """

    __slots__ = ()
    _kind = "image"
    _default_mime = "image/png"
    _by_suffix = _IMAGE_TYPES


class Audio(_Media):
    """Audio a tool or prompt returns; like :class:`Image`, defaulting to ``audio/wav``.

    Revisions before 2025-03-26 have no audio content: there it becomes a text block saying so.
    """

    __slots__ = ()
    _kind = "audio"
    _default_mime = "audio/wav"
    _by_suffix = _AUDIO_TYPES


class ResourceLink:
    """A link to a resource (``resource_link`` content, 2025-06-18 on; text before that)."""

    __slots__ = ("description", "mime_type", "name", "title", "uri")

    def __init__(
        self,
        uri: str,
        name: str,
        *,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
    ) -> None:
        self.uri = uri
        self.name = name
        self.title = title
        self.description = description
        self.mime_type = mime_type

    def to_content(self) -> dict[str, Any]:
        block: dict[str, Any] = {"type": "resource_link", "name": self.name}
        if self.title is not None:
            block["title"] = self.title
        block["uri"] = self.uri
        if self.description is not None:
            block["description"] = self.description
        if self.mime_type is not None:
            block["mimeType"] = self.mime_type
        return block


class EmbeddedResource:
    """A resource's contents carried inside a result (``resource`` content)."""

    __slots__ = ("blob", "mime_type", "text", "uri")

    def __init__(
        self,
        uri: str,
        *,
        text: str | None = None,
        blob: bytes | None = None,
        mime_type: str | None = None,
    ) -> None:
        if (text is None) == (blob is None):
            raise ValueError("EmbeddedResource takes exactly one of text or blob")
        self.uri = uri
        self.text = text
        self.blob = blob
        self.mime_type = mime_type

    def to_content(self) -> dict[str, Any]:
        inner: dict[str, Any] = {"uri": self.uri}
        if self.mime_type is not None:
            inner["mimeType"] = self.mime_type
        if self.text is not None:
            inner["text"] = self.text
        else:
            inner["blob"] = base64.b64encode(self.blob or b"").decode("ascii")
        return {"type": "resource", "resource": inner}


_HELPERS = (Image, Audio, ResourceLink, EmbeddedResource)


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


#: ``pydantic_core.to_json``'s keyword arguments for the text of a value (the extension
#: calls it with them too, for a tool's declared model: ``ToolRoute(model_out=...)``).
TEXT_JSON: dict[str, Any] = {"fallback": str, "indent": 2}
#: The same without the indent: the compact JSON the extension indents as ``indent=2`` does,
#: for the text of a tool's dict, list or float result (``ToolRoute(data_out=...)``).
TEXT_JSON_COMPACT: dict[str, Any] = {k: v for k, v in TEXT_JSON.items() if k != "indent"}


def to_json_text(value: Any) -> str:
    """JSON text for a value shown to the model, indented like the official SDK's."""
    return pydantic_core.to_json(value, **TEXT_JSON).decode()


def to_jsonable(value: Any) -> Any:
    """``value`` as plain JSON types (models dumped by alias; unknown objects as ``str``)."""
    return pydantic_core.to_jsonable_python(value, fallback=str, by_alias=True)


def _foreign_block(value: Any) -> dict[str, Any] | None:
    """A content block from the official SDK's types or helpers, or None."""
    if isinstance(value, BaseModel):
        if type(value).__module__.startswith(("mcp", "fastmcp")) and (
            getattr(value, "type", None) in CONTENT_TYPES
        ):
            dumped: dict[str, Any] = value.model_dump(mode="json", by_alias=True, exclude_none=True)
            return dumped
        return None
    for method in ("to_image_content", "to_audio_content"):
        convert = getattr(value, method, None)
        if convert is not None:
            return _foreign_block(convert())
    return None


def is_content_type(kind: type) -> bool:
    """Whether instances of ``kind`` are content helpers (shaped as blocks, not data)."""
    return issubclass(kind, _HELPERS)


def is_content(value: Any) -> bool:
    """Whether ``value`` is a content block object (not data to serialize)."""
    return isinstance(value, _HELPERS) or _foreign_block(value) is not None


def fit_block(block: dict[str, Any], revision: Revision) -> dict[str, Any]:
    """``block`` as ``revision`` can carry it: content types it lacks become text."""
    kind = block.get("type")
    if kind == "audio" and not revision.audio:
        return text_block(
            f"[audio ({block.get('mimeType', 'unknown type')}) omitted: "
            f"protocol {revision.version} has no audio content]"
        )
    if kind == "resource_link" and not revision.resource_links:
        label = block.get("title") or block.get("name") or block.get("uri", "")
        return text_block(f"{label}: {block.get('uri', '')}")
    return block


def content_blocks(value: Any, revision: Revision) -> list[dict[str, Any]]:
    """The content blocks for a tool's return value (the official SDK's rules).

    ``None`` → none; ``str`` → one text block; a content object (``Image``, ``Audio``,
    ``ResourceLink``, ``EmbeddedResource``, an SDK content model) → its block; a list or tuple →
    the blocks of each item in turn; anything else → one text block of its JSON.
    """
    out: list[dict[str, Any]] = []
    _append_blocks(value, revision, out)
    return out


def _append_blocks(value: Any, revision: Revision, out: list[dict[str, Any]]) -> None:
    kind = type(value)
    if kind is str:
        out.append(text_block(value))
    elif value is None:
        return
    elif kind is bool:
        out.append(text_block("true" if value else "false"))
    elif kind is int:
        out.append(text_block(str(value)))
    elif isinstance(value, list | tuple):
        for item in value:
            _append_blocks(item, revision, out)
    elif isinstance(value, _HELPERS):
        out.append(fit_block(value.to_content(), revision))
    elif isinstance(value, str):
        out.append(text_block(str(value)))
    elif kind is dict or kind is float:
        out.append(text_block(to_json_text(value)))
    else:
        foreign = _foreign_block(value)
        if foreign is not None:
            out.append(fit_block(foreign, revision))
        else:
            out.append(text_block(to_json_text(value)))


def one_block(value: Any, revision: Revision) -> dict[str, Any]:
    """A single content block (for a prompt message): text for strings, JSON text for data."""
    if isinstance(value, str):
        return text_block(value)
    if isinstance(value, dict):
        if value.get("type") in CONTENT_TYPES:
            return fit_block(value, revision)
        return text_block(to_json_text(value))
    blocks = content_blocks(value, revision)
    if len(blocks) != 1:
        raise ValueError(f"a prompt message holds one content block, not {len(blocks)}")
    return blocks[0]


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
