"""Tool-call validation of the official SDK 1.x, without redoing the same work on every call.

The SDK 1.x low-level server checks every ``tools/call``'s arguments against the tool's
``inputSchema``, and its structured result against the ``outputSchema``, with
``jsonschema.validate``. That function checks the schema against its metaschema and builds a
new validator each time: about 0.2 ms for a small schema, most of an adapted call's cost.
:func:`install` gives the SDK's module a ``jsonschema`` whose ``validate`` keeps the validator
of each schema it has checked, and reuses it while the schema is the same object with the
same content. Everything else in the module is the real ``jsonschema``.

What ``validate`` does is unchanged: the same validator class (``validator_for``), the same
metaschema check (done again whenever the schema is new or changed), the same error raised
(``best_match`` over the same errors). A valid instance is recognized with ``is_valid``;
only an invalid one collects its errors, as ``jsonschema.validate`` does for every one.
"""

from __future__ import annotations

import copy
import types
from typing import Any

#: How many schemas' validators are kept (the oldest goes first): a server lists a bounded
#: set of tools, but a low-level one may build new schema objects on every listing.
MAX_SCHEMAS = 512


class _Checked:
    """A schema that passed its metaschema check, its content then, and its validator."""

    __slots__ = ("schema", "snapshot", "validator")

    def __init__(self, schema: dict[str, Any], validator: Any) -> None:
        self.schema = schema
        self.snapshot = copy.deepcopy(schema)
        self.validator = validator


class CachingJsonSchema(types.ModuleType):
    """The ``jsonschema`` module as one SDK module sees it: its own ``validate`` (see the
    module docstring), every other name the real module's."""

    def __init__(self, real: types.ModuleType) -> None:
        super().__init__(real.__name__, real.__doc__)
        self._real = real
        self._checked: dict[int, _Checked] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def validate(self, instance: Any, schema: Any, cls: Any = None, *args: Any, **kw: Any) -> None:
        real = self._real
        if cls is not None or args or kw or type(schema) is not dict:
            real.validate(instance, schema, cls, *args, **kw)
            return
        checked = self._checked.get(id(schema))
        if checked is None or checked.schema is not schema or checked.snapshot != schema:
            found = real.validators.validator_for(schema)
            found.check_schema(schema)
            checked = _Checked(schema, found(schema))
            self._checked.pop(id(schema), None)
            while len(self._checked) >= MAX_SCHEMAS:
                del self._checked[next(iter(self._checked))]
            self._checked[id(schema)] = checked
        validator = checked.validator
        if validator.is_valid(instance):
            return
        error = real.exceptions.best_match(validator.iter_errors(instance))
        if error is not None:
            raise error


def install(module: types.ModuleType) -> None:
    """Give ``module`` (one that did ``import jsonschema``) the caching ``validate``."""
    real = getattr(module, "jsonschema", None)
    if isinstance(real, types.ModuleType) and not isinstance(real, CachingJsonSchema):
        module.jsonschema = CachingJsonSchema(real)  # type: ignore[attr-defined]


__all__ = ["MAX_SCHEMAS", "CachingJsonSchema", "install"]
