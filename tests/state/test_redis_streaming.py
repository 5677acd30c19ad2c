"""The streaming tests of tests/transports/http/test_http_streaming.py again, with sessions, event
logs and
streams in Redis, served twice: by two separate ``jetmcp run`` processes behind a
round-robin TCP proxy (every new connection, a GET stream, a POST, a resumption, lands on
the other host from the one before, so each test's session crosses hosts all the time), and
by one ``jetmcp run --workers 2``.

The tests that read a worker's own bookkeeping (``stats``: parked messages, live POST
streams, tasks) are left out; tests/state/test_redis_state.py checks the same through Redis."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from harness.redis_support import REDIS_URL, Hosts, RoundRobinProxy, drop_keys, new_prefix
from harness.servers import AppServer
from transports.http.test_http_streaming import (
    APP,
    KEEPALIVE_SECONDS,
    test_a_call_that_sends_nothing_stays_json,
    test_a_client_that_takes_only_json_gets_json,
    test_a_streaming_batch_ends_with_the_ordered_array,
    test_closing_early_needs_sse_polling,
    test_delete_closes_the_session_streams,
    test_each_message_goes_to_exactly_one_stream,
    test_early_close_then_resume_with_last_event_id,
    test_get_statuses,
    test_idle_streams_get_keepalive_comments,
    test_log_lines_stream_before_the_result,
    test_older_revisions_get_ids_but_no_priming,
    test_progress_turns_the_reply_into_an_event_stream,
    test_python_sdk_follows_streams_and_resumes,
    test_server_to_client_request_on_the_post_stream,
    test_standalone_stream_carries_session_messages,
    test_unknown_post_stream_cannot_be_resumed,
)


class ProxiedHosts:
    """What the imported tests use of a server (``url``, ``base``), pointing at the proxy."""

    def __init__(self, proxy: RoundRobinProxy) -> None:
        self.url = proxy.url
        self.base = proxy.url.removesuffix("/mcp")


@pytest.fixture(scope="module", params=["two-hosts", "two-workers"])
def server(request: pytest.FixtureRequest) -> Iterator[Any]:
    """Two hosts behind the proxy, or one ``jetmcp run --workers 2`` (the kernel spreads
    its connections over the workers)."""
    keepalive = ("--keepalive-seconds", str(KEEPALIVE_SECONDS))
    if request.param == "two-workers":
        prefix = new_prefix()
        one = AppServer(
            APP,
            "--workers",
            "2",
            "--redis",
            REDIS_URL,
            "--redis-prefix",
            prefix,
            *keepalive,
            label="2 workers",
        )
        try:
            yield one
        finally:
            one.stop()
            drop_keys(prefix)
        return
    group = Hosts(APP, *keepalive)
    proxy = RoundRobinProxy([s.port for s in group.servers])
    try:
        yield ProxiedHosts(proxy)
    finally:
        proxy.close()
        group.stop()


__all__ = [
    "test_a_call_that_sends_nothing_stays_json",
    "test_a_client_that_takes_only_json_gets_json",
    "test_a_streaming_batch_ends_with_the_ordered_array",
    "test_closing_early_needs_sse_polling",
    "test_delete_closes_the_session_streams",
    "test_each_message_goes_to_exactly_one_stream",
    "test_early_close_then_resume_with_last_event_id",
    "test_get_statuses",
    "test_idle_streams_get_keepalive_comments",
    "test_log_lines_stream_before_the_result",
    "test_older_revisions_get_ids_but_no_priming",
    "test_progress_turns_the_reply_into_an_event_stream",
    "test_python_sdk_follows_streams_and_resumes",
    "test_server_to_client_request_on_the_post_stream",
    "test_standalone_stream_carries_session_messages",
    "test_unknown_post_stream_cannot_be_resumed",
]
