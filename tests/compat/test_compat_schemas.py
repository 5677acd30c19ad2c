"""compat/schemas.py: the SDK 1.x's ``jsonschema.validate`` with each schema's validator kept
gives exactly what ``jsonschema.validate`` gives, call after call, schema change after change."""

from __future__ import annotations

import copy
import types
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jetmcp.compat import schemas

SCALARS = st.sampled_from(["string", "integer", "number", "boolean", "null", "array", "object"])
LEAF = st.one_of(
    st.builds(lambda t: {"type": t}, SCALARS),
    st.builds(lambda n: {"type": "integer", "minimum": n}, st.integers(-2, 2)),
    st.builds(lambda n: {"type": "string", "maxLength": n}, st.integers(0, 3)),
    st.builds(lambda v: {"enum": v}, st.lists(st.integers(0, 2) | st.text(max_size=1), min_size=1)),
    # Fresh objects each draw (st.just would hand out one shared dict, which the test then
    # changes in place).
    st.builds(dict),
    # Not a valid schema: validate raises SchemaError, every time.
    st.builds(lambda: {"type": "nope"}),
    st.builds(lambda: {"minimum": "x"}),
)
SCHEMA = st.recursive(
    LEAF,
    lambda inner: st.one_of(
        st.builds(
            lambda props, req: {
                "type": "object",
                "properties": props,
                "required": [k for k in props if k in req],
            },
            st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
            st.sets(st.sampled_from(["a", "b", "c"])),
        ),
        st.builds(lambda items: {"type": "array", "items": items}, inner),
        st.builds(lambda parts: {"anyOf": parts}, st.lists(inner, min_size=1, max_size=2)),
    ),
    max_leaves=6,
)
#: A schema, or one whose body is a definition it refers to (as pydantic writes models).
TOP = SCHEMA | st.builds(lambda d: {"$defs": {"D": d}, "$ref": "#/$defs/D"}, SCHEMA)
INSTANCE = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-3, 3) | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), inner, max_size=3)
    ),
    max_leaves=6,
)


def outcome(validate: Any, instance: Any, schema: Any) -> Any:
    try:
        validate(instance=instance, schema=schema)
    except jsonschema.SchemaError as exc:
        return ("schema", exc.message, list(exc.path), exc.validator)
    except jsonschema.ValidationError as exc:
        return ("invalid", exc.message, list(exc.path), list(exc.schema_path), exc.validator)
    return ("valid",)


@settings(max_examples=300, deadline=None)
@given(
    schema=TOP,
    instances=st.lists(INSTANCE, min_size=1, max_size=4),
    change=TOP,
)
def test_the_same_outcome_as_jsonschema_validate(
    schema: dict[str, Any], instances: list[Any], change: dict[str, Any]
) -> None:
    schema, change = copy.deepcopy(schema), copy.deepcopy(change)
    cached = schemas.CachingJsonSchema(jsonschema)
    for instance in instances:
        assert outcome(cached.validate, instance, schema) == outcome(
            jsonschema.validate, instance, copy.deepcopy(schema)
        )
    # The same object changed in place: checked again, validated by its new content.
    schema.clear()
    schema.update(change)
    for instance in instances:
        assert outcome(cached.validate, instance, schema) == outcome(
            jsonschema.validate, instance, copy.deepcopy(schema)
        )


def test_a_schema_is_checked_once_while_it_stays_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cached = schemas.CachingJsonSchema(jsonschema)
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    validator = jsonschema.validators.Draft202012Validator
    real_check = validator.check_schema
    checks = 0

    def counting(value: Any, **kw: Any) -> None:
        nonlocal checks
        checks += 1
        real_check(value, **kw)

    monkeypatch.setattr(validator, "check_schema", counting)
    for n in range(5):
        cached.validate({"a": n}, schema)
    assert checks == 1
    schema["properties"]["a"] = {"type": "string"}
    assert outcome(cached.validate, {"a": 1}, schema)[0] == "invalid"
    assert checks == 2


def test_the_cache_is_bounded() -> None:
    cached = schemas.CachingJsonSchema(jsonschema)
    kept = [{"type": "integer", "minimum": n} for n in range(schemas.MAX_SCHEMAS + 50)]
    for schema in kept:
        cached.validate(10**6, schema)
    assert len(cached._checked) == schemas.MAX_SCHEMAS


def test_install_replaces_only_a_module_that_imported_jsonschema() -> None:
    module = types.ModuleType("sdk_like")
    module.jsonschema = jsonschema  # type: ignore[attr-defined]
    schemas.install(module)
    wrapped = module.jsonschema  # type: ignore[attr-defined]
    assert isinstance(wrapped, schemas.CachingJsonSchema)
    assert wrapped.ValidationError is jsonschema.ValidationError
    schemas.install(module)
    assert module.jsonschema is wrapped  # type: ignore[attr-defined]
    other = types.ModuleType("no_jsonschema")
    schemas.install(other)
    assert not hasattr(other, "jsonschema")
