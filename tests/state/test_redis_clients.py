"""The official Python and TypeScript SDK clients of tests/interop/test_sdk_clients.py again, over
HTTP,
against two ``jetmcp run`` processes sharing their sessions through Redis, reached through a
round-robin TCP proxy: each new connection a client opens (its POSTs, its GET stream, its
resumption) goes to the other host from the one before.

The cancellation tests are left out: they read what the tool noted in the memory of the
process it ran in, which the proxy may not reach again; tests/state/test_redis_state.py checks a
cancellation sent to the other host."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from harness.redis_support import Hosts, RoundRobinProxy
from interop.test_sdk_clients import (
    APP,
    test_python_sdk_answers_elicitation,
    test_python_sdk_answers_roots,
    test_python_sdk_answers_sampling,
    test_python_sdk_lists_and_calls,
    test_python_sdk_receives_progress_and_logs,
    test_python_sdk_resumes_a_dropped_stream,
    test_ts_sdk_answers_elicitation,
    test_ts_sdk_answers_roots,
    test_ts_sdk_answers_sampling,
    test_ts_sdk_lists_and_calls,
    test_ts_sdk_receives_logs,
    test_ts_sdk_receives_progress,
    test_ts_sdk_resumes_a_dropped_stream,
    ts_client,
)


@pytest.fixture(scope="module")
def proxy() -> Iterator[RoundRobinProxy]:
    group = Hosts(APP)
    balancer = RoundRobinProxy([s.port for s in group.servers])
    try:
        yield balancer
    finally:
        balancer.close()
        group.stop()


@pytest.fixture(scope="module")
def fixture_url(proxy: RoundRobinProxy) -> str:
    return proxy.url


@pytest.fixture
def target(proxy: RoundRobinProxy) -> Any:
    return proxy.url


def test_the_proxy_spread_the_connections(proxy: RoundRobinProxy) -> None:
    """Runs last in this module: the clients above opened connections to both hosts."""
    assert proxy.accepted >= 2


__all__ = [
    "test_python_sdk_answers_elicitation",
    "test_python_sdk_answers_roots",
    "test_python_sdk_answers_sampling",
    "test_python_sdk_lists_and_calls",
    "test_python_sdk_receives_progress_and_logs",
    "test_python_sdk_resumes_a_dropped_stream",
    "test_ts_sdk_answers_elicitation",
    "test_ts_sdk_answers_roots",
    "test_ts_sdk_answers_sampling",
    "test_ts_sdk_lists_and_calls",
    "test_ts_sdk_receives_logs",
    "test_ts_sdk_receives_progress",
    "test_ts_sdk_resumes_a_dropped_stream",
    "ts_client",
]
