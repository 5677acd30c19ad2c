"""Instructions per request of the extension's HTTP/1.1 framing (``_wire.Http1Connection``),
counted by callgrind, next to h11 doing the same.

Each case runs twice under ``valgrind --tool=callgrind`` (``--loop CASE --count`` low and high);
the difference of the totals over the difference of the counts is one request's cost, start-up
cancelled out. The request is what ``bench/load/callgrind_live.py`` sends (Python's
``http.client``: a ``tools/call`` POST with its six headers), the reply a JSON body.

    .venv/bin/python bench/http1_instructions.py                 # every case
    .venv/bin/python bench/http1_instructions.py server client

Cases: ``server`` (feed the request, read its body, write the response), ``server-gate`` (the
same plus the header lookups the MCP gate makes: Host, Origin, Content-Type, Accept,
MCP-Protocol-Version, Mcp-Session-Id), ``client`` (write a request, read the response whole),
``h11-server`` (the ``server`` case through h11), ``loop`` (the loop alone, already
subtracted from the others). Build the release extension first (``maturin develop --release``).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

_TOTAL = re.compile(rb"^(?:summary|totals):\s+(\d+)", re.M)

BODY = (
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call",'
    b'"params":{"name":"add","arguments":{"a":1,"b":2}}}'
)
REQUEST = (
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nAccept-Encoding: identity\r\n"
    b"Content-Length: %d\r\nContent-Type: application/json\r\n"
    b"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-06-18\r\n\r\n%s"
) % (len(BODY), BODY)
REPLY = (
    b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"3"}],"isError":false}}'
)
JSON = [(b"content-type", b"application/json")]
RESPONSE = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (
    len(REPLY),
    REPLY,
)


def _server() -> Callable[[], object]:
    from jetmcp import _wire

    conn = _wire.Http1Connection()

    def run() -> object:
        request = conn.feed(REQUEST)
        assert request is not None
        body = request.body
        return conn.respond(200, JSON, REPLY), body

    return run


def _server_gate() -> Callable[[], object]:
    from jetmcp import _wire

    conn = _wire.Http1Connection()
    names = (
        b"host",
        b"origin",
        b"content-type",
        b"accept",
        b"mcp-protocol-version",
        b"mcp-session-id",
    )

    def run() -> object:
        request = conn.feed(REQUEST)
        assert request is not None
        header = request.header
        seen = [header(name) for name in names]
        body = request.body
        return conn.respond(200, JSON, REPLY), body, seen

    return run


def _client() -> Callable[[], object]:
    from jetmcp import _wire

    conn = _wire.Http1ClientConnection()
    headers = [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json")]

    def run() -> object:
        out = conn.request(b"POST", b"/mcp", headers, BODY)
        events = conn.feed(RESPONSE)
        return out, events[0].body

    return run


def _h11_server() -> Callable[[], object]:
    import h11

    conn = h11.Connection(h11.SERVER)
    headers = [("content-type", "application/json"), ("content-length", str(len(REPLY)))]

    def run() -> object:
        conn.receive_data(REQUEST)
        request = conn.next_event()
        data = conn.next_event()
        end = conn.next_event()
        assert isinstance(end, h11.EndOfMessage), (request, data, end)
        out = conn.send(h11.Response(status_code=200, headers=headers))
        assert out is not None
        out += conn.send(h11.Data(data=REPLY)) or b""
        out += conn.send(h11.EndOfMessage()) or b""
        conn.start_next_cycle()
        return out

    return run


CASES: dict[str, Callable[[], Callable[[], object]]] = {
    "loop": lambda: lambda: None,
    "server": _server,
    "server-gate": _server_gate,
    "client": _client,
    "h11-server": _h11_server,
}


def total(case: str, count: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        subprocess.run(
            [
                *("valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"),
                *(sys.executable, __file__, "--loop", case, "--count", str(count)),
            ],
            check=True,
            capture_output=True,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )
        found = _TOTAL.search(out.read_bytes())
        assert found is not None
        return int(found.group(1))


def per_call(case: str, low: int, high: int) -> float:
    return (total(case, high) - total(case, low)) / (high - low)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", default=[c for c in CASES if c != "loop"])
    parser.add_argument("--loop", metavar="CASE", help="run CASE --count times (under valgrind)")
    parser.add_argument("--count", type=int, default=1000)
    args = parser.parse_args()
    if args.loop:
        fn = CASES[args.loop]()
        for _ in range(args.count):
            fn()
        return 0
    loop = per_call("loop", 1000, 3000)
    for case in args.cases:
        cost = per_call(case, 1000, 3000) - loop
        print(f"{case:12} {cost:9,.0f} instructions per request")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
