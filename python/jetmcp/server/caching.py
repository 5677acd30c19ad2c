"""Caching hints (2026-07-28): ``ttlMs`` and ``cacheScope`` on complete results of
``server/discover``, ``tools/list``, ``prompts/list``, ``resources/list``,
``resources/templates/list`` and ``resources/read``.

Each tool, prompt, resource and template may set its own (``ttl_ms=``, ``cache_scope=`` in the
decorators); the server's defaults (``Server(cache_ttl_ms=..., cache_scope=...)``) fill in the
rest. A list's hint is the shortest ttl and the most private scope of the items it lists
(every page of a list carries the same hint), so a cached list never outlives the item that
wants the least caching. ``resources/read`` carries the hint of what was read.

The defaults (``0`` ms, ``"private"``) promise nothing: a response may be reused right away
only by the same authorization context. Raise them for data that is the same for everyone
and changes rarely. ``InputRequiredResult`` rounds carry no hints (they must not be cached).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

CacheScope = Literal["public", "private"]
SCOPES: tuple[str, ...] = ("public", "private")


def check_hint(ttl_ms: object, cache_scope: object) -> None:
    """ValueError for a ttl that is not a non-negative int or a scope that is not one of
    :data:`SCOPES` (None is fine for either: "use the server's default")."""
    if ttl_ms is not None and (
        not isinstance(ttl_ms, int) or isinstance(ttl_ms, bool) or ttl_ms < 0
    ):
        raise ValueError(f"ttl_ms must be a non-negative int (milliseconds), not {ttl_ms!r}")
    if cache_scope is not None and cache_scope not in SCOPES:
        raise ValueError(f"cache_scope must be 'public' or 'private', not {cache_scope!r}")


def combined(
    items: Iterable[tuple[int | None, str | None]], default_ttl_ms: int, default_scope: str
) -> tuple[int, str]:
    """The hint of a list: the least ttl and the most private scope of its items (each
    falling back to the defaults); the defaults for an empty list."""
    ttl: int | None = None
    scope: str | None = None
    for item_ttl, item_scope in items:
        effective = default_ttl_ms if item_ttl is None else item_ttl
        ttl = effective if ttl is None else min(ttl, effective)
        if (item_scope or default_scope) == "private" or scope is None:
            scope = item_scope or default_scope
    return (default_ttl_ms if ttl is None else ttl), (default_scope if scope is None else scope)


__all__ = ["SCOPES", "CacheScope", "check_hint", "combined"]
