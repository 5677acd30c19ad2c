"""The recorder's reply check: its byte-search fast path classifies exactly as the full parse."""

from __future__ import annotations

import orjson
import pytest

from jetmcp.bench.recorder import Recorder

BODIES = [
    b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"3"}],"isError":false}}',
    b'{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}',
    b'{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError": true}}',
    b'{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError": false}}',
    b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"\\"isError\\":true"}],'
    b'"isError":false}}',
    b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"isError"}],'
    b'"isError":true}}',
    b'{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}',
    b'{"jsonrpc":"2.0","id":1,"result":{}}',
]


def _expected(body: bytes) -> str | None:
    message = orjson.loads(body)
    if "error" in message:
        return f"jsonrpc {message['error']['code']}"
    return "isError" if message["result"].get("isError") is True else None


@pytest.mark.parametrize("body", BODIES)
def test_fast_path_agrees_with_the_parse(body: bytes) -> None:
    rec = Recorder(["tools/call add"], 0)
    rec.reply(0, 100, 1, 200, body, 1)
    want = _expected(body)
    assert rec.entries == 1
    assert rec.failures == (0 if want is None else 1)
    assert rec.kinds == ({} if want is None else {(0, want): 1})
