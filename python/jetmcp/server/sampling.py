"""Sampling (``sampling/createMessage``: the client's LLM answers) and roots (``roots/list``):
building the requests and reading the answers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from jetmcp.protocol.content import one_block
from jetmcp.protocol.revisions import Revision


def _content(value: Any, revision: Revision) -> Any:
    if isinstance(value, list):
        # Several blocks (tool use and tool results, 2025-11-25): sent as given.
        return [v if isinstance(v, dict) else one_block(v, revision) for v in value]
    return one_block(value, revision)


def _message(item: Any, revision: Revision) -> dict[str, Any]:
    if isinstance(item, BaseModel):
        item = item.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(item, dict) and "role" in item and "content" in item:
        out = dict(item)
        out["content"] = _content(item["content"], revision)
        return out
    role = getattr(item, "role", None)
    if role in ("user", "assistant") and hasattr(item, "content"):  # prompts.Message
        return {"role": role, "content": _content(item.content, revision)}
    return {"role": "user", "content": _content(item, revision)}


def sampling_messages(messages: str | Sequence[Any], revision: Revision) -> list[dict[str, Any]]:
    """``messages`` in wire form: a string is one user message; a list holds strings (user
    messages), ``Message``/``UserMessage``/``AssistantMessage``, dicts with ``role`` and
    ``content``, or the SDK's ``SamplingMessage``."""
    if isinstance(messages, str):
        return [_message(messages, revision)]
    return [_message(item, revision) for item in messages]


def model_preferences(value: Any) -> dict[str, Any] | None:
    """A model name, a list of names (hints, most preferred first), or a dict/model as is."""
    if value is None:
        return None
    if isinstance(value, str):
        return {"hints": [{"name": value}]}
    if isinstance(value, BaseModel):
        dumped: dict[str, Any] = value.model_dump(mode="json", by_alias=True, exclude_none=True)
        return dumped
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, list | tuple):
        return {"hints": [{"name": str(name)} for name in value]}
    raise TypeError(f"model_preferences must be a str, a list of str or a dict, not {value!r}")


@dataclass(frozen=True, slots=True)
class SamplingResult:
    """The client's ``CreateMessageResult``."""

    role: str
    #: A content block (a list of them when the model used tools).
    content: Any
    model: str | None = None
    stop_reason: str | None = None
    #: The whole result as the client sent it.
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str | None:
        """The text of the answer, or None when it holds no text."""
        blocks = self.content if isinstance(self.content, list) else [self.content]
        texts = [
            b["text"]
            for b in blocks
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        ]
        return "".join(texts) if texts else None


def read_sampling_result(answer: Any) -> SamplingResult:
    if not isinstance(answer, dict) or "content" not in answer:
        raise ValueError("the client's sampling answer has no content")
    model = answer.get("model")
    stop = answer.get("stopReason")
    return SamplingResult(
        role=str(answer.get("role", "assistant")),
        content=answer["content"],
        model=model if isinstance(model, str) else None,
        stop_reason=stop if isinstance(stop, str) else None,
        raw=answer,
    )


@dataclass(frozen=True, slots=True)
class Root:
    """A root the client exposes (a directory or file URI, usually ``file://``)."""

    uri: str
    name: str | None = None
    meta: dict[str, Any] | None = None


def read_roots(answer: Any) -> list[Root]:
    roots = answer.get("roots") if isinstance(answer, dict) else None
    if not isinstance(roots, list):
        raise ValueError("the client's roots/list answer has no roots list")
    out: list[Root] = []
    for item in roots:
        if not isinstance(item, dict) or not isinstance(item.get("uri"), str):
            raise ValueError(f"not a root: {item!r}")
        name = item.get("name")
        meta = item.get("_meta")
        out.append(
            Root(
                item["uri"],
                name if isinstance(name, str) else None,
                meta if isinstance(meta, dict) else None,
            )
        )
    return out


__all__ = [
    "Root",
    "SamplingResult",
    "model_preferences",
    "read_roots",
    "read_sampling_result",
    "sampling_messages",
]
