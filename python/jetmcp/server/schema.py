"""JSON schemas and compiled validators from function signatures.

Everything here runs once, when a tool, resource template or prompt is registered: the
argument model, its JSON schema and its validator are built then and reused for every call.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import inspect
import re
import sys
import types
import typing
import uuid
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal, get_args, get_origin

import annotated_types
import orjson
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    TypeAdapter,
    ValidationError,
    create_model,
)
from pydantic.errors import PydanticUserError
from pydantic.fields import FieldInfo
from pydantic.json_schema import WithJsonSchema

from jetmcp.protocol.content import Audio, EmbeddedResource, Image, ResourceLink
from jetmcp.protocol.tool_result import Output

_EMPTY = inspect.Parameter.empty


class ArgumentsBase(BaseModel):
    """Base of the generated argument models: unknown arguments are ignored, as the SDK does."""

    model_config = ConfigDict(arbitrary_types_allowed=True)


# ---------------------------------------------------------------------------------------------
# Docstrings


_SECTION = re.compile(r"^(Args|Arguments|Parameters|Params)\s*:\s*$", re.IGNORECASE)
_OTHER_SECTION = re.compile(
    r"^(Returns?|Yields?|Raises?|Examples?|Notes?|See Also|Warnings?|Attributes)\s*:?\s*$",
    re.IGNORECASE,
)
_ARG_LINE = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_SPHINX_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")


def component_name(fn: Callable[..., Any], name: str | None, kind: str) -> str:
    """The name a tool, prompt or resource is registered under: the one given, else the
    function's own (a lambda has none worth listing)."""
    found = name or getattr(fn, "__name__", None)
    if not found or found == "<lambda>":
        raise ValueError(f"a {kind} made from a lambda needs a name")
    return str(found)


def doc_summary(fn: Callable[..., Any]) -> str | None:
    """The first paragraph of ``fn``'s docstring, on one line (None without a docstring)."""
    doc = inspect.getdoc(fn)
    if not doc:
        return None
    lines: list[str] = []
    for line in doc.splitlines():
        stripped = line.strip()
        if not stripped or _SECTION.match(stripped) or stripped.startswith(":param"):
            break
        lines.append(stripped)
    return " ".join(lines) or None


def doc_whole(fn: Callable[..., Any]) -> str | None:
    """``fn``'s docstring exactly as written (None without one): the description the
    official SDK publishes, ``Args:``/``Parameters:`` sections and indentation included, so
    a model sees the same text on jetmcp as on the SDK."""
    doc = getattr(fn, "__doc__", None)
    return doc if isinstance(doc, str) and doc else None


def doc_params(fn: Callable[..., Any]) -> dict[str, str]:
    """Parameter descriptions from a Google-style ``Args:`` section or Sphinx ``:param x:``."""
    doc = inspect.getdoc(fn)
    if not doc:
        return {}
    found: dict[str, str] = {}
    current: str | None = None
    in_args = False
    arg_indent = -1
    for raw in doc.splitlines():
        stripped = raw.strip()
        sphinx = _SPHINX_PARAM.match(stripped)
        if sphinx:
            current = sphinx.group(1)
            found[current] = sphinx.group(2).strip()
            in_args = False
            continue
        if _SECTION.match(stripped):
            in_args, current, arg_indent = True, None, -1
            continue
        if not in_args:
            if current is not None and stripped and not stripped.startswith(":"):
                found[current] = f"{found[current]} {stripped}".strip()
            else:
                current = None
            continue
        if not stripped:
            current = None
            continue
        if _OTHER_SECTION.match(stripped):
            in_args, current = False, None
            continue
        indent = len(raw) - len(raw.lstrip())
        match = _ARG_LINE.match(stripped)
        if match and (arg_indent < 0 or indent <= arg_indent):
            arg_indent = indent
            current = match.group(1)
            found[current] = match.group(2).strip()
        elif current is not None:
            found[current] = f"{found[current]} {stripped}".strip()
    return {name: text for name, text in found.items() if text}


# ---------------------------------------------------------------------------------------------
# Signatures


def _is_context_type(tp: Any) -> bool:
    """Whether ``tp`` is a Context class: jetmcp's, or any class named ``Context`` (the official
    SDK's and PrefectHQ fastmcp's), also inside ``Optional[...]`` or ``Context[...]``."""
    if isinstance(tp, str):
        name = tp.strip().strip("'\"")
        return re.fullmatch(r"(?:[\w.]*\.)?Context(?:\[.*\])?(?:\s*\|\s*None)?", name) is not None
    if isinstance(tp, type):
        return any(base.__name__ == "Context" for base in tp.__mro__)
    origin = get_origin(tp)
    if origin is None:
        return False
    if origin is Annotated:
        return _is_context_type(get_args(tp)[0])
    if isinstance(origin, type) and _is_context_type(origin):
        return True
    return any(_is_context_type(arg) for arg in get_args(tp) if arg is not type(None))


def _signature(fn: Callable[..., Any]) -> inspect.Signature:
    """The signature with string annotations evaluated where possible.

    An annotation that cannot be evaluated stays a string; a string naming ``Context`` is still
    recognized (code that imports the SDK's Context only under ``TYPE_CHECKING``).
    """
    try:
        return inspect.signature(fn, eval_str=True)
    except NameError:
        pass
    sig = inspect.signature(fn)
    globalns = getattr(inspect.unwrap(fn), "__globals__", {})
    params = []
    for param in sig.parameters.values():
        ann = param.annotation
        if isinstance(ann, str):
            try:
                ann = eval(ann, globalns)
            except Exception:
                if not _is_context_type(ann):
                    raise TypeError(
                        f"cannot evaluate the annotation {ann!r} of parameter {param.name!r} "
                        f"of {getattr(fn, '__qualname__', fn)!r}"
                    ) from None
            param = param.replace(annotation=ann)
        params.append(param)
    ret = sig.return_annotation
    if isinstance(ret, str):
        try:
            ret = eval(ret, globalns)
        except Exception:
            ret = _EMPTY
    return sig.replace(parameters=params, return_annotation=ret)


def _has_description(annotation: Any, default: Any) -> bool:
    if isinstance(default, FieldInfo) and default.description:
        return True
    if get_origin(annotation) is Annotated:
        return any(isinstance(m, FieldInfo) and m.description for m in get_args(annotation)[1:])
    return False


#: Parameter types whose arguments skip the model when they have exactly that type.
_PLAIN_TYPES = (str, int, float, bool)
_UNIONS = (typing.Union, types.UnionType)


def _plain_kind(annotation: Any) -> tuple[type, bool] | None:
    """``(type, nullable)`` for ``str``/``int``/``float``/``bool`` and for each of them
    ``| None`` (``Optional``); None for any other annotation."""
    if annotation in _PLAIN_TYPES:
        return annotation, False
    if get_origin(annotation) in _UNIONS:
        args = get_args(annotation)
        if len(args) == 2 and type(None) in args:
            other = args[0] if args[1] is type(None) else args[1]
            if other in _PLAIN_TYPES:
                return other, True
    return None


#: No value (a missing argument, a parameter without a default).
_REQUIRED: Any = object()


@dataclasses.dataclass(slots=True)
class Arguments:
    """A function's arguments: the model, its schema, and how to validate a call's arguments."""

    #: The parameter that takes the Context (left out of the schema), if any.
    context_param: str | None
    model: type[BaseModel]
    schema: dict[str, Any]
    #: Parameter names in signature order (without the context parameter).
    names: tuple[str, ...]
    required: tuple[str, ...]
    descriptions: dict[str, str]
    #: (field name, parameter name) for fields renamed to avoid clashing with BaseModel.
    renames: tuple[tuple[str, str], ...]
    #: Parameters whose type is not ``str``: a JSON string given for one is parsed on retry.
    json_params: frozenset[str]
    validate_python: Callable[[Any], Any]
    #: The function takes ``**kwargs``: arguments it does not name are passed through.
    var_keyword: bool = False
    #: When every parameter is a plain ``str``/``int``/``float``/``bool``, or one of those
    #: ``| None`` (no metadata, a required one or an immutable default): (name, type,
    #: default or ``_REQUIRED``, whether None is allowed) each. Arguments of exactly those
    #: types (or None where allowed) are what the model would give back unchanged, and an
    #: integer for a float what it makes ``float(n)``, so they skip it; anything else goes
    #: through the model.
    plain: tuple[tuple[str, type, Any, bool], ...] | None = None
    #: When some parameters are pydantic models (required, with no metadata) and the others
    #: plain as for :attr:`plain`: each as in :attr:`plain`, a model one as (name, the
    #: model, ``_REQUIRED``, False). The extension may then read each model argument with
    #: that model's own validator and the plain ones itself (``ToolRoute(models=...)``),
    #: making no model of the whole arguments.
    mixed: tuple[tuple[str, type, Any, bool], ...] | None = None

    def validate(self, arguments: dict[str, Any], fast: bool = True) -> dict[str, Any]:
        """Validated keyword arguments for the function (a fresh dict); ``fast`` False
        takes the model even for plain arguments.

        Raises ``pydantic.ValidationError``. Clients that send a JSON-encoded list or object as
        a string (some do) are retried with the string parsed, as the official SDK does.
        """
        plain = self.plain
        if plain is not None and fast:
            values: dict[str, Any] = {}
            for name, kind, default, nullable in plain:
                value = arguments.get(name, _REQUIRED)
                if value is _REQUIRED:
                    if default is _REQUIRED:
                        break
                    value = default
                elif type(value) is not kind and not (nullable and value is None):
                    if kind is not float or type(value) is not int:
                        break
                    # An integer for a float: what the model makes of it (as the extension
                    # reads it); past the doubles, the model says why not.
                    try:
                        value = float(value)
                    except OverflowError:
                        break
                values[name] = value
            else:
                return values
        try:
            model = self.validate_python(arguments)
        except ValidationError:
            reparsed = self._parse_json_strings(arguments)
            if reparsed is None:
                raise
            model = self.validate_python(reparsed)
        values = dict(model.__dict__)
        for field, param in self.renames:
            values[param] = values.pop(field)
        if self.var_keyword:
            for key, value in arguments.items():
                if key not in values and key.isidentifier():
                    values[key] = value
        return values

    def _parse_json_strings(self, arguments: dict[str, Any]) -> dict[str, Any] | None:
        changed: dict[str, Any] | None = None
        for key, value in arguments.items():
            if key in self.json_params and isinstance(value, str):
                try:
                    parsed = orjson.loads(value)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(parsed, dict | list):
                    if changed is None:
                        changed = dict(arguments)
                    changed[key] = parsed
        return changed


#: The types whose values ``validate_json`` makes exactly as ``validate_python`` makes them
#: from the objects the extension builds out of the same JSON (lax mode).
_JSON_ALIKE_LEAVES: frozenset[Any] = frozenset({str, int, float, bool, type(None)})
#: Types read from a JSON string (or number) alike in both modes, but only on their own: in
#: strict mode JSON may give them a string where Python may not, so a union with one of them
#: (``datetime | str``) or a ``Strict`` one picks or refuses differently.
_JSON_PARSED_LEAVES: frozenset[Any] = frozenset(
    {datetime.date, datetime.datetime, datetime.time, uuid.UUID}
)
#: The kinds of value a ``Literal`` may name for its arguments to read alike.
_LITERAL_VALUES: frozenset[type] = frozenset({str, int, bool, type(None)})


def validates_json_alike(model: type[BaseModel], _seen: frozenset[type] = frozenset()) -> bool:
    """Whether ``model.__pydantic_validator__.validate_json(raw)`` gives what
    ``validate_python`` gives for the objects the extension builds from ``raw`` (and refuses
    what it refuses), judged from the model alone: no strict mode and no configuration that
    reads JSON apart, no validators of its own (they would see the input), and fields of
    ``str``/``int``/``float``/``bool``/None, ``Literal`` values of those, enums of ``str``
    or ``int`` values, ``date``/``datetime``/``time``/``UUID``, ``X | None``, ``list[X]``,
    ``dict[str, X]``, models like this one, and unions of the kinds that read no string
    apart (no model, date or UUID in them), constrained by ``annotated_types`` only. Anything
    else (``timedelta``, decimals, bytes, ``Any``, a union with a model...) is read
    differently in JSON mode, or may be: such a model's arguments are validated from the
    built objects."""
    if model in _seen:
        return True
    seen = _seen | {model}
    config = model.model_config
    if (
        config.get("strict")
        or config.get("coerce_numbers_to_str")
        or config.get("val_json_bytes", "utf8") != "utf8"
    ):
        return False
    decorators = model.__pydantic_decorators__
    if (
        decorators.validators
        or decorators.field_validators
        or decorators.root_validators
        or decorators.model_validators
    ):
        return False
    for field in model.model_fields.values():
        if not _plain_metadata(field.metadata) or not _json_alike(field.annotation, seen):
            return False
    return True


#: The core schema types whose serializer writes a value of exactly that Python type as is.
_PLAIN_DUMP_KINDS = ("float", "int", "str", "bool")


def plain_dump(model: type[BaseModel]) -> list[tuple[str, str, str, bool]] | None:
    """How ``model``'s serializer writes an instance, when it writes each field as is: the
    fields in order as (attribute, serialization alias, kind, whether None is allowed),
    for the extension to write a tool's returned instance itself (``ToolRoute``'s
    ``model_out``); None for any model whose serializer does more. Read from the core
    schema the serializer is built from: a model (not a root model) of model fields only,
    no model or field serializer, no computed field, no extra fields kept, no field
    excluded, each field a ``float``, ``int``, ``str`` or ``bool`` schema (constraints
    allowed: they only validate), or one of those or None, with or without a default. At
    run time a field holding anything but exactly its kind (or None where allowed) leaves
    the instance to the serializer."""
    schema: Any = model.__pydantic_core_schema__
    if (
        schema.get("type") != "model"
        or schema.get("root_model")
        or "serialization" in schema
        or schema.get("config", {}).get("extra_fields_behavior") == "allow"
    ):
        return None
    fields_schema = schema.get("schema", {})
    if (
        fields_schema.get("type") != "model-fields"
        or fields_schema.get("computed_fields")
        or fields_schema.get("extra_behavior") == "allow"
        or "extras_schema" in fields_schema
    ):
        return None
    out = []
    for name, field in fields_schema["fields"].items():
        if (
            field.get("type") != "model-field"
            or field.get("serialization_exclude")
            or field.get("serialization_exclude_if") is not None
        ):
            return None
        inner = field["schema"]
        if inner.get("type") == "default":
            inner = inner["schema"]
        nullable = inner.get("type") == "nullable"
        if nullable:
            inner = inner["schema"]
        if inner.get("type") not in _PLAIN_DUMP_KINDS or "serialization" in inner:
            return None
        out.append((name, field.get("serialization_alias", name), inner["type"], nullable))
    return out


def _plain_metadata(metadata: Sequence[Any]) -> bool:
    """Constraints only: a ``Strict`` marker (``Field(strict=True)``) reads JSON apart."""
    return all(
        isinstance(m, annotated_types.BaseMetadata) and not isinstance(m, Strict) for m in metadata
    )


def _json_alike(annotation: Any, seen: frozenset[type], in_union: bool = False) -> bool:
    """``in_union``: a member of a union with another member than None, where pydantic's
    smart mode tries each in strict mode first."""
    if annotation in _JSON_ALIKE_LEAVES:
        return True
    if annotation in _JSON_PARSED_LEAVES:
        return not in_union
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is Annotated:
        return _plain_metadata(args[1:]) and _json_alike(args[0], seen, in_union)
    if origin is Literal:
        return all(type(value) in _LITERAL_VALUES for value in args)
    if origin is typing.Union or origin is types.UnionType:
        kinds = [a for a in args if a is not type(None)]
        if len(kinds) == 1:
            return _json_alike(kinds[0], seen, in_union)
        return all(_json_alike(kind, seen, True) for kind in kinds)
    if origin is list and len(args) == 1:
        return _json_alike(args[0], seen, in_union)
    if origin is dict and len(args) == 2:
        return args[0] is str and _json_alike(args[1], seen, in_union)
    if origin is None and isinstance(annotation, type):
        if issubclass(annotation, enum.Enum):
            # Not a flag (any combination of bits is a value) and not one that tells pydantic
            # how to read it (its own schema may read JSON apart).
            return (
                not issubclass(annotation, enum.Flag)
                and not hasattr(annotation, "__get_pydantic_core_schema__")
                and all(type(member.value) in (str, int) for member in annotation)
            )
        if issubclass(annotation, BaseModel):
            return not in_union and validates_json_alike(annotation, seen)
    return False


def _unsupported(model_name: str, sig: inspect.Signature, exc: Exception) -> str:
    """Which parameter has a type pydantic can make no schema of, for the error naming it
    (rather than pydantic's message alone, whose last line is a URL)."""
    owner = model_name.removesuffix("Arguments")
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    for param in sig.parameters.values():
        annotation = param.annotation
        if annotation is _EMPTY or _is_context_type(annotation):
            continue
        try:
            TypeAdapter(annotation).json_schema()
        except Exception:
            shown = getattr(annotation, "__name__", None) or repr(annotation)
            return (
                f"{owner}: parameter {param.name!r} has type {shown}, which has no JSON "
                "schema (use a plain type, a pydantic model, a dataclass or a TypedDict, or "
                f"give an explicit input schema): {first}"
            )
    return f"{owner}: its parameters have no JSON schema: {first}"


def build_arguments(
    fn: Callable[..., Any],
    model_name: str,
    *,
    sig: inspect.Signature | None = None,
    allow_var_keyword: bool = False,
) -> Arguments:
    """Build the argument model of ``fn`` (once, at registration). ``allow_var_keyword``
    accepts a ``**kwargs`` parameter (a tool with an explicit input schema)."""
    if sig is None:
        sig = _signature(fn)
    docs = doc_params(fn)
    context_param: str | None = None
    fields: dict[str, Any] = {}
    names: list[str] = []
    required: list[str] = []
    renames: list[tuple[str, str]] = []
    json_params: set[str] = set()
    var_keyword = False
    plain: list[tuple[str, type, Any, bool]] | None = []
    mixed: list[tuple[str, type, Any, bool]] | None = []
    for param in sig.parameters.values():
        if param.kind is inspect.Parameter.VAR_KEYWORD and allow_var_keyword:
            var_keyword = True
            continue
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise TypeError(f"{model_name}: *args and **kwargs parameters are not supported")
        if param.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise TypeError(f"{model_name}: positional-only parameter {param.name!r}")
        annotation = param.annotation
        if annotation is not _EMPTY and _is_context_type(annotation):
            context_param = param.name
            continue
        if param.name.startswith("_"):
            raise TypeError(f"{model_name}: parameter {param.name!r} starts with '_'")
        default = _REQUIRED if param.default is _EMPTY else param.default
        kind = _plain_kind(annotation)
        if kind is not None and (
            default is _REQUIRED or default is None or type(default) in _PLAIN_TYPES
        ):
            if plain is not None:
                plain.append((param.name, kind[0], default, kind[1]))
            if mixed is not None:
                mixed.append((param.name, kind[0], default, kind[1]))
        else:
            plain = None
            if (
                mixed is not None
                and default is _REQUIRED
                and isinstance(annotation, type)
                and issubclass(annotation, BaseModel)
            ):
                mixed.append((param.name, annotation, _REQUIRED, False))
            else:
                mixed = None
        metadata: list[Any] = []
        if annotation is _EMPTY:
            annotation = Any
            metadata.append(WithJsonSchema({"title": param.name, "type": "string"}))
        description = docs.get(param.name)
        if description and not _has_description(annotation, param.default):
            metadata.append(Field(description=description))
        if annotation is not str:
            json_params.add(param.name)
        field_name = param.name
        if hasattr(BaseModel, field_name):
            field_name = f"field_{param.name}"
            metadata.append(Field(alias=param.name))
            renames.append((field_name, param.name))
        typed: Any = Annotated[(annotation, *metadata)] if metadata else annotation
        if param.default is _EMPTY:
            fields[field_name] = (typed, ...)
            required.append(param.name)
        else:
            fields[field_name] = (typed, param.default)
        names.append(param.name)
    try:
        model: type[BaseModel] = create_model(model_name, __base__=ArgumentsBase, **fields)
        schema = model.model_json_schema(by_alias=True)
    except PydanticUserError as exc:
        raise TypeError(_unsupported(model_name, sig, exc)) from exc
    descriptions = {
        name: prop["description"]
        for name, prop in schema.get("properties", {}).items()
        if isinstance(prop, dict) and isinstance(prop.get("description"), str)
    }
    return Arguments(
        context_param=context_param,
        model=model,
        schema=schema,
        names=tuple(names),
        required=tuple(required),
        descriptions=descriptions,
        renames=tuple(renames),
        json_params=frozenset(json_params),
        validate_python=model.__pydantic_validator__.validate_python,
        var_keyword=var_keyword,
        plain=tuple(plain) if plain is not None and not var_keyword else None,
        mixed=tuple(mixed) if plain is None and mixed and not var_keyword else None,
    )


# ---------------------------------------------------------------------------------------------
# Output schemas


_PRIMITIVES: tuple[type, ...] = (str, int, float, bool, bytes, type(None))
_CONTENT_HELPERS = (Image, Audio, ResourceLink, EmbeddedResource)


def _returns_content(tp: Any) -> bool:
    """Whether a return annotation declares content blocks (bare, in a list/tuple or union)."""
    origin = get_origin(tp)
    if origin is None:
        if not isinstance(tp, type):
            return False
        if issubclass(tp, _CONTENT_HELPERS):
            return True
        # The official SDK's content types and Image/Audio helpers.
        return tp.__module__.startswith(("mcp", "fastmcp")) and (
            tp.__name__.endswith("Content")
            or tp.__name__ in ("Image", "Audio", "ResourceLink", "EmbeddedResource")
        )
    if origin is Annotated:
        return _returns_content(get_args(tp)[0])
    if origin in (list, tuple, Sequence, typing.Union) or _is_union(origin):
        return any(_returns_content(arg) for arg in get_args(tp))
    return False


def _is_union(origin: Any) -> bool:
    import types

    return origin is types.UnionType or origin is typing.Union


def _typeddict_for_pydantic(tp: Any) -> Any:
    """pydantic refuses ``typing.TypedDict`` below Python 3.12: rebuild it with
    ``typing_extensions`` so users need not know."""
    if sys.version_info >= (3, 12) or type(tp).__module__ != "typing":
        return tp
    import typing_extensions

    hints = typing.get_type_hints(tp, include_extras=True)
    items: dict[str, Any] = {}
    for key, hint in hints.items():
        items[key] = hint if key in tp.__required_keys__ else typing_extensions.NotRequired[hint]
    factory: Any = typing_extensions.TypedDict
    rebuilt: Any = factory(tp.__name__, items)
    for attr in ("__doc__", "__module__", "__qualname__"):
        setattr(rebuilt, attr, getattr(tp, attr))
    return rebuilt


def _inline_root_ref(schema: dict[str, Any]) -> dict[str, Any]:
    """Give a schema whose root is a ``$ref`` into ``$defs`` an object root (the SDK's fix for
    self-referencing models)."""
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/$defs/"):
        return schema
    definition: dict[str, Any] = schema["$defs"][ref.removeprefix("#/$defs/")]
    return {**definition, **{k: v for k, v in schema.items() if k != "$ref"}}


def build_output(
    fn_name: str, return_annotation: Any, structured_output: bool | None
) -> Output | None:
    """The output schema for a return annotation, following the official SDK's rules.

    ``structured_output=None`` decides from the annotation (none for a missing annotation or
    content blocks); ``True`` insists (``TypeError`` when impossible); ``False`` turns it off.
    """
    if structured_output is False:
        return None
    if return_annotation is _EMPTY:
        if structured_output:
            raise TypeError(f"{fn_name}: structured output needs a return annotation")
        return None
    base = return_annotation
    while get_origin(base) is Annotated:
        base = get_args(base)[0]
    if structured_output is None and _returns_content(base):
        return None

    wrap = False
    model: Any = None
    fast_type: type | None = None
    origin = get_origin(base)
    if base is None or base is type(None):
        wrap = True
    elif origin is dict:
        args = get_args(base)
        if not args or args[0] is str:
            model = Annotated[base, Field(title=f"{fn_name}DictOutput")]
        else:
            wrap = True
    elif origin is not None:
        wrap = True
    elif isinstance(base, type):
        if issubclass(base, BaseModel):
            model = base
        elif typing.is_typeddict(base):
            model = _typeddict_for_pydantic(base)
        elif base is dict:
            model = Annotated[dict[str, Any], Field(title=f"{fn_name}DictOutput")]
        elif base in _PRIMITIVES:
            wrap = True
            if base in (str, int, float, bool) and return_annotation is base:
                fast_type = base
        elif dataclasses.is_dataclass(base):
            model = base
        else:
            hints = typing.get_type_hints(base)
            if hints:
                fields: dict[str, Any] = {
                    name: (hint, getattr(base, name, ...))
                    for name, hint in hints.items()
                    if not name.startswith("_")
                }
                model = create_model(
                    base.__name__, __config__=ConfigDict(from_attributes=True), **fields
                )
    else:
        wrap = True
    if wrap:
        model = create_model(f"{fn_name}Output", result=(return_annotation, ...))
    if model is None:
        if structured_output:
            raise TypeError(f"{fn_name}: return type {base!r} cannot be structured output")
        return None
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(model)
        schema = _inline_root_ref(adapter.json_schema(by_alias=True))
    except Exception as exc:
        if structured_output:
            raise TypeError(f"{fn_name}: return type {base!r} has no JSON schema: {exc}") from exc
        return None
    if schema.get("type") != "object":
        if structured_output:
            raise TypeError(f"{fn_name}: the output schema of {base!r} is not an object")
        return None
    return Output(schema=schema, wrap=wrap, adapter=adapter, fast_type=fast_type)


def signature(fn: Callable[..., Any]) -> inspect.Signature:
    """``fn``'s signature with its annotations evaluated (see :func:`build_arguments`)."""
    return _signature(fn)


__all__ = [
    "Arguments",
    "build_arguments",
    "build_output",
    "doc_params",
    "doc_summary",
    "doc_whole",
    "signature",
]
