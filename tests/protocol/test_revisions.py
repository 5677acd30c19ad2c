"""Pins every field of every revision in the revision table."""

from __future__ import annotations

import dataclasses

import pytest

from jetmcp.protocol import revisions
from jetmcp.protocol.revisions import Revision

ORDER: tuple[Revision, ...] = (
    revisions.R2024_11_05,
    revisions.R2025_03_26,
    revisions.R2025_06_18,
    revisions.R2025_11_25,
    revisions.R2026_07_28,
)

BASE = frozenset(
    {
        "initialize",
        "ping",
        "logging/setLevel",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "prompts/list",
        "prompts/get",
        "completion/complete",
    }
)
TASKS = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"})
MODERN_METHODS = frozenset(
    {
        "server/discover",
        "completion/complete",
        "prompts/get",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "subscriptions/listen",
        "tools/call",
        "tools/list",
        "tasks/get",
        "tasks/update",
        "tasks/cancel",
    }
)

# One row a field; the columns are the revisions in ORDER:
#   2024-11-05    2025-03-26    2025-06-18    2025-11-25    2026-07-28
TABLE: dict[str, tuple[object, ...]] = {
    "version": ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"),
    "batching": (True, True, False, False, False),
    "modern": (False, False, False, False, True),
    "completions_capability": (False, True, True, True, True),
    "annotations": (False, True, True, True, True),
    "audio": (False, True, True, True, True),
    "progress_message": (False, True, True, True, True),
    "titles": (False, False, True, True, True),
    "structured_output": (False, False, True, True, True),
    "resource_links": (False, False, True, True, True),
    "elicitation": (False, False, True, True, True),
    "icons": (False, False, False, True, True),
    "tasks": (False, False, False, True, False),
    "sse_priming": (False, False, False, True, False),
    "resource_not_found_code": (-32002, -32002, -32002, -32002, -32602),
    "completion_context": (False, False, True, True, True),
    "url_elicitation": (False, False, False, True, False),
    "sampling_tools": (False, False, False, True, True),
    "result_type": (False, False, False, False, True),
    "cache_hints": (False, False, False, False, True),
    "mrtr": (False, False, False, False, True),
    "routing_headers": (False, False, False, False, True),
    "per_request_log_level": (False, False, False, False, True),
    "per_request_capabilities": (False, False, False, False, True),
    "sessions": (True, True, True, True, False),
    "error_status": (False, False, False, False, True),
    "batch_extension": (False, False, False, False, True),
    "elicitation_modes": (False, False, False, True, True),
    "tasks_extension": (False, False, False, False, True),
    "definition_meta": (False, False, True, True, True),
    "website_url": (False, False, False, True, True),
    "instructions": (False, True, True, True, True),
    "methods": (BASE, BASE, BASE, BASE | TASKS, MODERN_METHODS),
}


def test_the_table_names_every_field() -> None:
    assert [f.name for f in dataclasses.fields(Revision)] == list(TABLE)


@pytest.mark.parametrize("column", range(len(ORDER)), ids=[r.version for r in ORDER])
def test_every_field_of_every_revision(column: int) -> None:
    rev = ORDER[column]
    expected = {name: row[column] for name, row in TABLE.items()}
    actual = {f.name: getattr(rev, f.name) for f in dataclasses.fields(Revision)}
    assert actual == expected
    # ``True == 1``: pin the types as well, so a bool never turns into an int or back.
    assert {k: type(v) for k, v in actual.items()} == {k: type(v) for k, v in expected.items()}


def test_the_revision_groups() -> None:
    assert ORDER[:4] == revisions.REVISIONS
    assert revisions.MODERN == (revisions.R2026_07_28,)
    assert ORDER[:4] == revisions.LEGACY
    assert revisions.LATEST_LEGACY is revisions.R2025_11_25
    assert revisions.HTTP_DEFAULT is revisions.R2025_03_26
    assert {r.version: r for r in ORDER[:4]} == revisions.BY_VERSION
    assert revisions.MODERN_BY_VERSION == {"2026-07-28": revisions.R2026_07_28}


def test_serves_custom_methods_only_before_2026() -> None:
    for rev in ORDER[:4]:
        assert rev.serves("x/custom")
        assert not rev.serves("tasks/update")
        assert not rev.serves("server/discover")
    assert not revisions.R2026_07_28.serves("x/custom")
    assert not revisions.R2026_07_28.serves("initialize")
    assert revisions.R2025_11_25.serves("tasks/result")
    assert not revisions.R2025_06_18.serves("tasks/result")
