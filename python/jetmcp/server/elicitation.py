"""Elicitation: asking the user for input through the client (``elicitation/create``).

Form mode (2025-06-18 on) sends a flat object schema of primitive properties; the answer is
validated into what the schema was given as. URL mode (2025-11-25) sends the user to a URL
for anything that must not pass through the client (credentials, payments, OAuth). A tool can
also refuse to go on until the user visited some URLs: ``raise UrlElicitationRequired([...])``
answers the request with the -32042 error.

The result classes mirror the official SDK's: :class:`AcceptedElicitation` (with ``data``),
:class:`DeclinedElicitation`, :class:`CancelledElicitation`; check ``result.action``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar, get_origin

from pydantic import BaseModel, ValidationError, create_model
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from jetmcp.errors import UrlElicitationError

T = TypeVar("T")

_PRIMITIVE_TYPES = frozenset({"string", "number", "integer", "boolean"})


@dataclass(frozen=True, slots=True)
class AcceptedElicitation(Generic[T]):
    """The user accepted and submitted ``data`` (validated against the requested schema)."""

    data: T
    action: Literal["accept"] = "accept"


@dataclass(frozen=True, slots=True)
class DeclinedElicitation:
    """The user explicitly declined."""

    action: Literal["decline"] = "decline"


@dataclass(frozen=True, slots=True)
class CancelledElicitation:
    """The user dismissed the request without choosing."""

    action: Literal["cancel"] = "cancel"


@dataclass(frozen=True, slots=True)
class AcceptedUrlElicitation:
    """The user agreed to open the URL (the interaction itself happens out of band)."""

    action: Literal["accept"] = "accept"


ElicitationResult = AcceptedElicitation[T] | DeclinedElicitation | CancelledElicitation
UrlElicitationResult = AcceptedUrlElicitation | DeclinedElicitation | CancelledElicitation


def client_modes(capabilities: dict[str, Any]) -> tuple[bool, bool]:
    """(form, url): the elicitation modes the client declared. ``{}`` means form only."""
    declared = capabilities.get("elicitation")
    if not isinstance(declared, dict):
        return False, False
    url = "url" in declared
    return ("form" in declared or not url), url


# ---------------------------------------------------------------------------------- schemas


class _FlatSchema(GenerateJsonSchema):
    """JSON schema without the ``anyOf [T, null]`` of optional fields and their None defaults:
    an optional property is one left out of ``required``."""

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        result = super().default_schema(schema)
        if result.get("default") is None:
            result.pop("default", None)
        return result


def _inline(prop: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = prop.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = defs.get(ref.removeprefix("#/$defs/"), {})
        prop = {**target, **{k: v for k, v in prop.items() if k != "$ref"}}
    items = prop.get("items")
    if isinstance(items, dict):
        prop = {**prop, "items": _inline(items, defs)}
    return prop


def _check_property(name: str, prop: Any) -> None:
    ok = isinstance(prop, dict) and (
        prop.get("type") in _PRIMITIVE_TYPES
        or "enum" in prop
        or "oneOf" in prop
        or (
            prop.get("type") == "array"
            and isinstance(prop.get("items"), dict)
            and ("enum" in prop["items"] or "anyOf" in prop["items"])
        )
    )
    if not ok:
        raise TypeError(
            f"elicitation field {name!r} has the schema {prop!r}: only strings, numbers, "
            "integers, booleans, enums and multi-select enum arrays can be elicited"
        )


def _render_model(model: type[BaseModel]) -> dict[str, Any]:
    raw = model.model_json_schema(schema_generator=_FlatSchema)
    defs = raw.get("$defs", {})
    properties: dict[str, Any] = {}
    for name, prop in raw.get("properties", {}).items():
        flat = _inline(prop, defs)
        _check_property(name, flat)
        properties[name] = flat
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if raw.get("required"):
        schema["required"] = list(raw["required"])
    return schema


@dataclass(frozen=True, slots=True)
class Form:
    """A prepared form: the ``requestedSchema`` to send and how to read an accepted answer."""

    schema: dict[str, Any]
    parse: Callable[[dict[str, Any]], Any]


def _model_form(model: type[BaseModel]) -> Form:
    return Form(_render_model(model), model.model_validate)


@functools.lru_cache(maxsize=256)
def _type_form(schema: Any) -> Form:
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return _model_form(schema)
    # A single value (``str``, ``int``, ``Literal[...]``, an Enum ...) is asked as ``value``.
    model = create_model("ElicitedValue", value=(schema, ...))
    form = _model_form(model)

    def parse(content: dict[str, Any]) -> Any:
        return model.model_validate(content).value  # type: ignore[attr-defined]

    return Form(form.schema, parse)


def _check_value(name: str, prop: dict[str, Any], value: Any) -> None:
    kind = prop.get("type")
    checks: dict[str, Callable[[Any], bool]] = {
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
        "array": lambda v: isinstance(v, list),
    }
    check = checks.get(kind) if isinstance(kind, str) else None
    if check is not None and not check(value):
        raise ValueError(f"field {name!r} should be of type {kind}, got {value!r}")
    allowed = prop.get("enum")
    if isinstance(allowed, list) and kind != "array" and value not in allowed:
        raise ValueError(f"field {name!r} must be one of {allowed}, got {value!r}")


def _dict_form(schema: dict[str, Any]) -> Form:
    if schema.get("type") != "object" or not isinstance(schema.get("properties", {}), dict):
        raise TypeError("an elicitation schema must be an object schema with properties")
    properties: dict[str, Any] = schema.get("properties", {})
    required = [r for r in schema.get("required", []) if isinstance(r, str)]

    def parse(content: dict[str, Any]) -> dict[str, Any]:
        missing = [name for name in required if name not in content]
        if missing:
            raise ValueError(f"missing required fields {missing}")
        for name, value in content.items():
            prop = properties.get(name)
            if isinstance(prop, dict):
                _check_value(name, prop, value)
        return dict(content)

    return Form(dict(schema), parse)


def prepare_form(schema: Any) -> Form:
    """The form for a schema given as a pydantic model class, a dict JSON schema (sent as
    is), a single type (``str``, ``int``, ``float``, ``bool``, ``Literal[...]``, an Enum: the
    answer is that value), or None (nothing to fill in: the answer is ``{}``)."""
    if schema is None:
        return _dict_form({"type": "object", "properties": {}})
    if isinstance(schema, dict):
        return _dict_form(schema)
    if isinstance(schema, type) or get_origin(schema) is not None:
        return _type_form(schema)
    raise TypeError(f"cannot elicit a {schema!r}: give a pydantic model, a dict schema or a type")


def read_answer(form: Form, answer: Any) -> ElicitationResult[Any]:
    """The result for the client's ``ElicitResult``; ValueError when it is malformed or the
    accepted content does not fit the schema."""
    if not isinstance(answer, dict):
        raise ValueError("the client's elicitation answer is not an object")
    action = answer.get("action")
    if action == "decline":
        return DeclinedElicitation()
    if action == "cancel":
        return CancelledElicitation()
    if action != "accept":
        raise ValueError(f"unknown elicitation action {action!r}")
    content = answer.get("content")
    if content is None:
        content = {}
    if not isinstance(content, dict):
        raise ValueError("the accepted elicitation content is not an object")
    try:
        return AcceptedElicitation(form.parse(content))
    except ValidationError as exc:
        raise ValueError(
            f"the accepted elicitation content does not match the requested schema: {exc}"
        ) from exc


def read_url_answer(answer: Any) -> UrlElicitationResult:
    action = answer.get("action") if isinstance(answer, dict) else None
    if action == "accept":
        return AcceptedUrlElicitation()
    if action == "decline":
        return DeclinedElicitation()
    if action == "cancel":
        return CancelledElicitation()
    raise ValueError(f"unknown elicitation action {action!r}")


# ------------------------------------------------------------------------------- -32042


@dataclass(frozen=True, slots=True)
class UrlElicitation:
    """One URL the user must visit (``ElicitRequestURLParams``)."""

    message: str
    url: str
    elicitation_id: str

    def to_wire(self) -> dict[str, Any]:
        return {
            "mode": "url",
            "message": self.message,
            "url": self.url,
            "elicitationId": self.elicitation_id,
        }


def _url_params(item: Any) -> dict[str, Any]:
    if isinstance(item, UrlElicitation):
        return item.to_wire()
    if isinstance(item, dict):
        params = dict(item)
    elif hasattr(item, "model_dump"):
        params = item.model_dump(mode="json", by_alias=True, exclude_none=True)
    else:
        raise TypeError(f"not a URL elicitation: {item!r}")
    if "elicitation_id" in params and "elicitationId" not in params:
        params["elicitationId"] = params.pop("elicitation_id")
    for key in ("message", "url", "elicitationId"):
        if not isinstance(params.get(key), str):
            raise TypeError(f"a URL elicitation needs a string {key!r}: {item!r}")
    params["mode"] = "url"
    return params


class UrlElicitationRequired(UrlElicitationError):
    """Raise from a tool (or any handler) when the request cannot go on until the user has
    completed URL-mode elicitations: the reply is the -32042 error with
    ``data.elicitations``.

    Items are :class:`UrlElicitation`, dicts in wire form, or the SDK's
    ``ElicitRequestURLParams``. On revisions before 2025-11-25, which have no such error, a
    tool call answers with an ``isError`` result that names the URLs instead
    (:meth:`~jetmcp.errors.UrlElicitationError.as_text`).
    """

    def __init__(self, elicitations: Sequence[Any], message: str | None = None) -> None:
        items = [_url_params(item) for item in elicitations]
        if not items:
            raise ValueError("UrlElicitationRequired needs at least one elicitation")
        super().__init__(
            items, message or "This request requires more information: open the given URL(s)."
        )


#: The official SDK's name.
UrlElicitationRequiredError = UrlElicitationRequired


__all__ = [
    "AcceptedElicitation",
    "AcceptedUrlElicitation",
    "CancelledElicitation",
    "DeclinedElicitation",
    "ElicitationResult",
    "Form",
    "UrlElicitation",
    "UrlElicitationRequired",
    "UrlElicitationRequiredError",
    "UrlElicitationResult",
    "client_modes",
    "prepare_form",
    "read_answer",
    "read_url_answer",
]
