"""Run in the drop-in corpus's mcp 1.x venv by test_request_models.py: the SDK 1.x adapter
validates a request against the one ``ClientRequest`` member its method names
(``jetmcp.compat.sdk1.request_models``); for every method and a spread of good and bad
params, that must give what validating against the whole union gives. Prints one JSON line
per case where they differ, and the number of cases compared last."""

from __future__ import annotations

import json
from typing import Any

import mcp.types as types

from jetmcp.compat.sdk1 import request_models

ABSENT = object()
PARAMS: list[Any] = [
    ABSENT,
    None,
    {},
    [],
    "x",
    {"name": "n"},
    {"name": 1},
    {"name": "n", "arguments": {"a": 1, "b": [1, 2]}},
    {"name": "n", "arguments": [1]},
    {"name": "n", "arguments": None},
    {"name": "n", "extra": True},
    {"name": "n", "task": {"ttl": 1000}},
    {"name": "n", "task": {"ttl": "soon"}},
    {"_meta": {"progressToken": "t"}},
    {"_meta": {"progressToken": 1.5}},
    {"_meta": None},
    {"name": "n", "_meta": {"progressToken": 7, "other": {"x": 1}}},
    {"uri": "file:///a"},
    {"uri": 3},
    {"uri": "not a uri"},
    {"level": "info"},
    {"level": "loud"},
    {"cursor": "c"},
    {"cursor": 1},
    {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "v"}},
    {"ref": {"type": "ref/resource", "uri": "x://y"}, "argument": {"name": "a", "value": "v"}},
    {"ref": {"type": "ref/other"}, "argument": {"name": "a", "value": "v"}},
    {"taskId": "t"},
    {"taskId": 5},
    {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "c", "version": "1"},
    },
    {"protocolVersion": "2025-06-18", "capabilities": {"roots": {"listChanged": True}}},
]


def outcome(validate: Any, message: dict[str, Any]) -> Any:
    try:
        found = validate(message)
    except Exception as exc:
        return ["refused", type(exc).__name__]
    return [type(found).__name__, found.model_dump(mode="json", by_alias=True), found]


def main() -> None:
    models = request_models(types.ClientRequest)
    compared = 0
    for method, model in sorted(models.items()):
        for params in PARAMS:
            message: dict[str, Any] = {"method": method}
            if params is not ABSENT:
                message["params"] = params
            whole = outcome(lambda m: types.ClientRequest.model_validate(m).root, message)
            alone = outcome(model.model_validate, message)
            same = whole[:2] == alone[:2] and (len(whole) == 2 or whole[2] == alone[2])
            if not same:
                print(json.dumps({"message": message, "union": whole[:2], "member": alone[:2]}))
            compared += 1
    print(compared)


if __name__ == "__main__":
    main()
