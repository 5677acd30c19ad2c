"""The Rust HTTP/1.1 server framing (``_wire.Http1Connection``) held to h11, the reference
sans-IO HTTP/1.1 state machine in Python.

Hypothesis writes streams of pipelined requests, each request either well formed or carrying
one defect (a framing error, a bad field, an odd version...). Both machines get the same
stream, fed whole, one byte at a time, and at generated split points, and answer every request
they hand out at once. They must hand out the same requests (method, target, fields, body) and
come to the same verdict (the status they refuse with, and whether the connection closes).

Where jetmcp is deliberately stricter (or, once, more lenient) than h11, the defect names its
divergence in ``DIVERGENCES`` with the RFC text behind it, and the test asserts exactly that
difference: jetmcp's verdict, and that both agree on every request before it.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence
from typing import Literal

import h11
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from jetmcp import _wire

#: The rules where jetmcp and h11 part ways on purpose. ``kind``:
#: ``stricter``: jetmcp refuses (with ``status``) what h11 reads;
#: ``status``: both refuse, jetmcp with ``status``, h11 with ``h11_status``;
#: ``lenient``: jetmcp reads what h11 refuses;
#: ``persists``: jetmcp keeps the connection open where h11 closes it.
DIVERGENCES: dict[str, tuple[str, int | None, int | None, str]] = {
    "obs-fold": (
        "stricter",
        400,
        None,
        "RFC 9112 5.2: a server that receives obs-fold in a request MUST either reject it "
        "with 400 or replace each fold with SP; jetmcp rejects (h11 unfolds).",
    ),
    "control-in-value": (
        "stricter",
        400,
        None,
        "RFC 9110 5.5: field values are VCHAR, obs-text, SP and HTAB; any other control byte "
        "(and DEL) is invalid. h11 accepts every byte but NUL and whitespace.",
    ),
    "both-length-and-chunked": (
        "stricter",
        400,
        None,
        "RFC 9112 6.1: a server MAY reject a request with both Content-Length and "
        "Transfer-Encoding (a smuggling vector); jetmcp does, h11 frames it by "
        "Transfer-Encoding.",
    ),
    "chunked-in-http10": (
        "stricter",
        400,
        None,
        "RFC 9112 6.1: an HTTP/1.0 message with Transfer-Encoding MUST be treated as having "
        "faulty framing; h11 reads it as chunked.",
    ),
    "coding-in-http10": (
        "status",
        400,
        501,
        "RFC 9112 6.1: an HTTP/1.0 message with Transfer-Encoding MUST be treated as having "
        "faulty framing (400), whatever the coding; h11 refuses a coding it does not know "
        "first (501).",
    ),
    "other-version": (
        "stricter",
        505,
        None,
        "RFC 9110 15.6.6: 505 for a major version the server does not support; jetmcp speaks "
        "HTTP/1.0 and HTTP/1.1 only, h11 takes any HTTP/d.d.",
    ),
    "chunk-size-overflow": (
        "stricter",
        400,
        None,
        "RFC 9112 7.1: a recipient MUST prevent integer overflow in chunk sizes; jetmcp "
        "refuses more than 16 significant hex digits (h11 takes up to 20 and waits for data).",
    ),
    "control-in-chunk-ext": (
        "stricter",
        400,
        None,
        "RFC 9112 7.1.1: chunk-ext is tokens and quoted strings; jetmcp refuses control bytes "
        "in it (h11 discards the extension unread).",
    ),
    "chunked-twice": (
        "status",
        400,
        501,
        "RFC 9112 7: chunked MUST NOT be applied more than once, so `chunked, chunked` is "
        "malformed framing (400); h11 calls it an unsupported coding (501).",
    ),
    "two-transfer-encoding-fields": (
        "status",
        400,
        501,
        "RFC 9112 6.1 / 7: two Transfer-Encoding fields of `chunked` apply it twice: 400 as "
        "above (h11: 501).",
    ),
    "huge-content-length": (
        "status",
        413,
        400,
        "RFC 9112 6.2: Content-Length is 1*DIGIT with no bound; a length beyond any body "
        "limit is too large (413), not malformed (h11: 400 past 20 digits).",
    ),
    "empty-line-before-request": (
        "lenient",
        None,
        400,
        "RFC 9112 2.2: a server SHOULD ignore at least one empty line received before the "
        "request-line; h11 refuses it.",
    ),
    "http10-keep-alive": (
        "persists",
        None,
        None,
        "RFC 9112 9.3: an HTTP/1.0 request with the keep-alive connection option persists; "
        "h11 closes every HTTP/1.0 connection after its response.",
    ),
}

TOKEN = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-.^_`|~"
VCHAR = bytes(range(0x21, 0x7F))
#: Field value bytes both machines accept: visible ASCII, obs-text, inner spaces and tabs.
VALUE_BYTES = VCHAR + bytes(range(0x80, 0x100))


@dataclasses.dataclass
class Spec:
    """One request of a stream, and its defect (None: well formed)."""

    method: bytes
    target: bytes
    version: bytes
    fields: list[tuple[bytes, bytes]]
    body: bytes
    chunked: bool
    close: bool
    defect: str | None = None
    #: The stream bytes of the request (set by :func:`render`).
    raw: bytes = b""
    #: What a defect makes both machines do when it is no divergence: refuse with this
    #: status, or (None) read the request normally.
    refused: int | None = None


def _chunks(body: bytes, cuts: Sequence[int], ext: bytes = b"") -> bytes:
    out = []
    start = 0
    for cut in [*sorted({c for c in cuts if 0 < c < len(body)}), len(body)]:
        piece = body[start:cut]
        if piece:
            out.append(b"%x%s\r\n%s\r\n" % (len(piece), ext, piece))
        start = cut
    return b"".join(out) + b"0\r\n\r\n"


def render(spec: Spec, draw: Callable[[st.SearchStrategy[object]], object]) -> None:
    """Writes ``spec`` as bytes, applying its defect."""
    fields = list(spec.fields)
    version = spec.version
    lead = b""
    eol = b"\r\n"
    body_bytes = spec.body
    cuts = draw(st.lists(st.integers(0, max(0, len(spec.body))), max_size=3))
    assert isinstance(cuts, list)
    if spec.chunked:
        fields.append((b"Transfer-Encoding", b"chunked"))
        body_bytes = _chunks(spec.body, cuts)
    elif spec.body or draw(st.booleans()):
        fields.append((b"Content-Length", b"%d" % len(spec.body)))
    if spec.close:
        fields.append((b"Connection", b"close"))
    d = spec.defect
    extra: list[bytes] = []
    if d == "obs-fold":
        extra.append(b"X-Folded: a" + eol + b" b")
    elif d == "control-in-value":
        ctl = draw(st.sampled_from([*range(1, 9), *range(0x0E, 0x20), 0x7F]))
        assert isinstance(ctl, int)
        extra.append(b"X-Ctl: a" + bytes([ctl]) + b"b")
    elif d == "nul-in-value":
        extra.append(b"X-Nul: a\x00b")
        spec.refused = 400
    elif d == "vtab-in-value":
        extra.append(b"X-Vt: a\x0bb")
        spec.refused = 400
    elif d == "space-before-colon":
        extra.append(b"X-Space : a")
        spec.refused = 400
    elif d == "bad-name":
        extra.append(b"X(y): a")
        spec.refused = 400
    elif d == "missing-host":
        fields = [f for f in fields if f[0].lower() != b"host"]
        # HTTP/1.0 may omit Host.
        spec.refused = 400 if version == b"1.1" else None
    elif d == "doubled-host":
        fields = [f for f in fields if f[0].lower() != b"host"]
        fields += [(b"Host", b"one"), (b"Host", b"other")]
        spec.refused = 400
    elif d == "both-length-and-chunked":
        fields.append((b"Content-Length", b"%d" % len(body_bytes)))
    elif d == "differing-lengths":
        fields = [f for f in fields if f[0] != b"Content-Length"]
        fields += [(b"Content-Length", b"0"), (b"Content-Length", b"1")]
        spec.refused = 400
    elif d == "same-length-twice":
        fields.append((b"Content-Length", b"%d" % len(spec.body)))
    elif d == "bad-length":
        bad = draw(st.sampled_from([b"+1", b"-1", b"1 2", b"0x1", b"1.0", b"", b"a"]))
        assert isinstance(bad, bytes)
        fields = [f for f in fields if f[0] != b"Content-Length"]
        fields.append((b"Content-Length", bad))
        spec.refused = 400
    elif d == "huge-content-length":
        fields = [f for f in fields if f[0] != b"Content-Length"]
        fields.append((b"Content-Length", b"9" * 25))
    elif d in ("unknown-coding", "coding-in-http10"):
        coding = draw(st.sampled_from([b"gzip", b"identity", b"gzip, chunked", b"br"]))
        assert isinstance(coding, bytes)
        fields = [f for f in fields if f[0] != b"Content-Length"]
        fields.append((b"Transfer-Encoding", coding))
        spec.refused = 501 if d == "unknown-coding" else 400
    elif d == "chunked-twice":
        fields = [f for f in fields if f[0] != b"Transfer-Encoding"]
        fields.append((b"Transfer-Encoding", b"chunked, chunked"))
    elif d == "two-transfer-encoding-fields":
        fields.append((b"Transfer-Encoding", b"chunked"))
    elif d == "chunk-size-0x":
        body_bytes = b"0x" + body_bytes
        spec.refused = 400
    elif d == "chunk-missing-crlf":
        body_bytes = b"%x\r\n%sXY0\r\n\r\n" % (len(spec.body), spec.body)
        spec.refused = 400
    elif d == "chunk-size-overflow":
        body_bytes = b"1" + b"0" * 16 + b"\r\n" + spec.body
    elif d == "control-in-chunk-ext":
        body_bytes = _chunks(spec.body, cuts, b";a=\x01")
    elif d == "chunk-ext":
        body_bytes = _chunks(spec.body, cuts, b';name="v a l";x')
    elif d == "trailers":
        body_bytes = body_bytes[:-2] + b"X-Trailer: t\r\nX-Other: u\r\n\r\n"
    elif d == "bad-trailer":
        body_bytes = body_bytes[:-2] + b"no colon\r\n\r\n"
        spec.refused = 400
    elif d == "chunked-in-http10":
        version = b"1.0"
    elif d == "other-version":
        drawn = draw(st.sampled_from([b"1.2", b"2.0", b"0.9", b"3.1"]))
        assert isinstance(drawn, bytes)
        version = drawn
    elif d == "bad-version":
        drawn = draw(st.sampled_from([b"1", b"1.1 ", b"11", b"x.y"]))
        assert isinstance(drawn, bytes)
        version = drawn
        spec.refused = 400
    elif d == "bad-target":
        spec.target = draw(st.sampled_from([b"/a b", "/é".encode(), b""]))  # type: ignore[assignment]
        spec.refused = 400
    elif d == "empty-line-before-request":
        lead = b"\r\n"
    elif d == "bare-lf":
        eol = b"\n"
    elif d == "expect-continue":
        fields.append((b"Expect", b"100-continue"))
    elif d == "http10-keep-alive":
        version = b"1.0"
        fields.append((b"Connection", b"keep-alive"))
    head = [spec.method + b" " + spec.target + b" HTTP/" + version]
    head += [name + b": " + value for name, value in fields]
    head += extra
    spec.version = version
    spec.fields = fields
    spec.raw = lead + eol.join(head) + eol + eol + body_bytes


DEFECTS = [
    *DIVERGENCES,
    "nul-in-value",
    "vtab-in-value",
    "space-before-colon",
    "bad-name",
    "missing-host",
    "doubled-host",
    "differing-lengths",
    "same-length-twice",
    "bad-length",
    "unknown-coding",
    "chunk-size-0x",
    "chunk-missing-crlf",
    "chunk-ext",
    "trailers",
    "bad-trailer",
    "bad-version",
    "bad-target",
    "bare-lf",
    "expect-continue",
]
#: Defects that need a chunked body, and those that need an HTTP/1.1 request.
NEED_CHUNKED = {
    "both-length-and-chunked",
    "chunked-in-http10",
    "chunk-size-overflow",
    "control-in-chunk-ext",
    "chunked-twice",
    "two-transfer-encoding-fields",
    "chunk-size-0x",
    "chunk-missing-crlf",
    "chunk-ext",
    "trailers",
    "bad-trailer",
}
NEED_NO_FRAMING = {
    "huge-content-length",
    "unknown-coding",
    "coding-in-http10",
    "bad-length",
    "differing-lengths",
}
#: Defects that need a body framed by Content-Length (or none), and HTTP/1.1.
NOT_CHUNKED = NEED_NO_FRAMING | {"same-length-twice", "http10-keep-alive"}


@st.composite
def specs(draw: st.DrawFn, forced: str | None = None) -> Spec:
    defect = forced or draw(st.one_of(st.none(), st.none(), st.sampled_from(DEFECTS)))
    method = draw(st.sampled_from([b"GET", b"POST", b"PUT", b"DELETE", b"OPTIONS", b"X-Y"]))
    target = b"/" + draw(st.binary(max_size=12).map(lambda b: bytes(VCHAR[x % 94] for x in b)))
    if defect in NEED_CHUNKED:
        version = b"1.1"
    elif defect == "coding-in-http10":
        version = b"1.0"
    else:
        version = draw(st.sampled_from([b"1.1"] * 5 + [b"1.0"]))
    if defect == "unknown-coding" and version == b"1.0":
        defect = "coding-in-http10"  # found by hypothesis: 400 here, 501 in h11
    fields: list[tuple[bytes, bytes]] = []
    if version == b"1.1" or draw(st.booleans()):
        fields.append((b"Host", b"example.com"))
    for _ in range(draw(st.integers(0, 4))):
        name = "X-" + draw(st.text(TOKEN, min_size=1, max_size=8))
        inner = draw(st.binary(max_size=10))
        value = bytes(VALUE_BYTES[x % len(VALUE_BYTES)] for x in inner)
        if len(value) > 2 and draw(st.booleans()):
            value = value[:1] + b" \t" + value[1:]
        fields.append((name.encode(), value))
    body = draw(st.binary(max_size=40))
    chunked = defect in NEED_CHUNKED or (
        version == b"1.1" and defect not in NOT_CHUNKED and draw(st.booleans())
    )
    if chunked and not body:
        body = b"x"
    if defect in NEED_NO_FRAMING:
        chunked = False
        body = b""
    close = version == b"1.1" and defect != "http10-keep-alive" and draw(st.integers(0, 9)) == 0
    spec = Spec(method, target, version, fields, body, chunked, close, defect)
    render(spec, draw)
    return spec


# ------------------------------------------------------------------------------- the machines

Seen = tuple[bytes, bytes, tuple[tuple[bytes, bytes], ...], bytes]


@dataclasses.dataclass
class Outcome:
    requests: list[Seen]
    #: The refusal's status (None: closed with no answer); absent: not refused.
    refused: int | Literal["no"] | None = "no"
    closed: bool = False


def _normal(fields: Sequence[tuple[bytes, bytes]]) -> tuple[tuple[bytes, bytes], ...]:
    # h11 rewrites the framing fields (one Content-Length kept of equal ones, Transfer-Encoding
    # in lower case); compare their names only, and one Content-Length.
    out = []
    for name, value in fields:
        name = name.lower()
        if name == b"content-length":
            if (name, b"") in out:
                continue
            value = b""
        elif name == b"transfer-encoding":
            value = b""
        out.append((name, value))
    return tuple(out)


def run_jetmcp(pieces: Sequence[bytes]) -> Outcome:
    conn = _wire.Http1Connection()
    out = Outcome([])
    for piece in pieces:
        try:
            request = conn.feed(piece)
            while request is not None:
                out.requests.append(
                    (request.method, request.target, _normal(request.headers()), request.body)
                )
                conn.respond(200, [(b"content-type", b"text/plain")], b"ok")
                request = conn.next_request()
        except _wire.Http1Error as refused:
            assert out.refused == "no", "refused twice"
            out.refused = refused.status
            # Final: nothing more is handed out, whatever comes.
            assert conn.feed(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n") is None
            assert conn.closed
    out.closed = conn.closed
    return out


def run_h11(pieces: Sequence[bytes]) -> Outcome:
    conn = h11.Connection(h11.SERVER)
    out = Outcome([])
    current: list[object] = []
    for piece in pieces:
        if out.refused != "no" or out.closed:
            break
        conn.receive_data(piece)
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError as refused:
                out.refused = refused.error_status_hint
                # A server closes after a protocol error (h11's state is ERROR).
                out.closed = True
                break
            if event is h11.NEED_DATA or event is h11.PAUSED:
                break
            if isinstance(event, h11.Request):
                current = [event, b""]
            elif isinstance(event, h11.Data):
                current[1] = bytes(current[1]) + bytes(event.data)  # type: ignore[arg-type]
            elif isinstance(event, h11.EndOfMessage):
                request = current[0]
                assert isinstance(request, h11.Request)
                body = current[1]
                assert isinstance(body, bytes)
                out.requests.append(
                    (request.method, request.target, _normal(request.headers.raw_items()), body)
                )
                conn.send(h11.Response(status_code=200, headers=[("content-length", "2")]))
                conn.send(h11.Data(data=b"ok"))
                conn.send(h11.EndOfMessage())
                if conn.our_state is h11.MUST_CLOSE:
                    out.closed = True
                    break
                conn.start_next_cycle()
    return out


# ------------------------------------------------------------------------------- the comparison


def expected_relation(stream: Sequence[Spec]) -> tuple[int, str | None]:
    """The index of the request where the machines may first part (a divergence), or where
    the stream ends for both (a shared refusal or close), and the divergence's name."""
    for i, spec in enumerate(stream):
        if spec.defect in DIVERGENCES:
            return i, spec.defect
        if spec.refused is not None or spec.close or spec.version == b"1.0":
            return i, None
    return len(stream), None


def compare(stream: Sequence[Spec], pieces: Sequence[bytes]) -> None:
    # An empty piece would be an end of stream to h11.
    pieces = [p for p in pieces if p]
    ours = run_jetmcp(pieces)
    ref = run_h11(pieces)
    at, divergence = expected_relation(stream)
    assert ours.requests[:at] == ref.requests[:at]
    if divergence is None:
        assert ours == ref
        if at < len(stream) and stream[at].refused is not None:
            assert ours.refused == stream[at].refused
            assert len(ours.requests) == at
        return
    kind, status, h11_status, _why = DIVERGENCES[divergence]
    if kind == "stricter":
        assert len(ours.requests) == at
        assert ours.refused == status
        assert ours.closed
    elif kind == "status":
        assert len(ours.requests) == len(ref.requests) == at
        assert (ours.refused, ref.refused) == (status, h11_status)
    elif kind == "lenient":
        assert len(ref.requests) == at and ref.refused == h11_status
        assert len(ours.requests) > at
        spec = stream[at]
        assert ours.requests[at][:2] == (spec.method, spec.target)
        assert ours.requests[at][3] == spec.body
    else:  # persists
        assert ours.requests[: at + 1] == ref.requests[: at + 1]
        assert ref.closed
        # jetmcp goes on: it reads the next request, refuses it, or waits for one.
        assert len(ours.requests) > at + 1 or ours.refused != "no" or not ours.closed


@st.composite
def streams(draw: st.DrawFn) -> tuple[list[Spec], bytes]:
    stream = draw(st.lists(specs(), min_size=1, max_size=4))
    return stream, b"".join(s.raw for s in stream)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams(), st.data())
def test_same_requests_and_verdicts_as_h11(
    generated: tuple[list[Spec], bytes], data: st.DataObject
) -> None:
    stream, raw = generated
    compare(stream, [raw])
    compare(stream, [raw[i : i + 1] for i in range(len(raw))])
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=6)))
    bounds = [0, *cuts, len(raw)]
    compare(stream, [raw[a:b] for a, b in itertools.pairwise(bounds)])


@pytest.mark.parametrize("divergence", sorted(DIVERGENCES))
def test_each_divergence_is_reached(divergence: str) -> None:
    """Every listed divergence is generated and asserted (not only listed)."""

    @settings(max_examples=5, deadline=None, database=None)
    @given(st.data())
    def check(data: st.DataObject) -> None:
        spec = data.draw(specs(divergence))
        stream = [spec]
        compare(stream, [spec.raw])
        compare(stream, [spec.raw[i : i + 1] for i in range(len(spec.raw))])

    check()


def test_stricter_divergences_are_real() -> None:
    """For each `stricter` rule, h11 really does read the request jetmcp refuses (so the
    list holds divergences, not shared refusals)."""
    samples = {
        "obs-fold": b"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n",
        "control-in-value": b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x01b\r\n\r\n",
        "both-length-and-chunked": b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "chunked-in-http10": b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "other-version": b"GET / HTTP/1.2\r\nHost: a\r\n\r\n",
        "control-in-chunk-ext": b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"1;a\x01\r\nx\r\n0\r\n\r\n",
    }
    for name, raw in samples.items():
        assert DIVERGENCES[name][0] == "stricter"
        ref = run_h11([raw])
        assert ref.refused == "no" and len(ref.requests) == 1, name
        ours = run_jetmcp([raw])
        assert ours.refused == DIVERGENCES[name][1] and not ours.requests, name


@example(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_never_crash(raw: bytes) -> None:
    """Arbitrary bytes give requests or one refusal, never another exception, and the verdict
    does not depend on the split."""
    whole = run_jetmcp([raw])
    assert whole == run_jetmcp([raw[i : i + 1] for i in range(len(raw))])
