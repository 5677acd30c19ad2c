//! The RFC 9112 framing rules of `http1`, one table row each, each checked fed whole and fed
//! one byte at a time (the verdict must not depend on how the bytes were split).

use jetmcp_wire::http1::client::{ClientConnection, ClientEvent};
use jetmcp_wire::http1::response::{self, WriteError};
use jetmcp_wire::http1::server::ServerConnection;
use jetmcp_wire::http1::{Limits, Phase, Refusal};

/// What a connection made of a byte stream: the requests it handed out (method, target,
/// body), its refusal, and what it wrote back (each request answered 200 `ok`).
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    requests: Vec<(String, String, Vec<u8>)>,
    refused: Option<Option<u16>>,
    closed: bool,
    written: Vec<u8>,
}

fn run(limits: Limits, input: &[u8], step: usize) -> Outcome {
    let mut conn = ServerConnection::new(limits);
    let mut out = Outcome {
        requests: Vec::new(),
        refused: None,
        closed: false,
        written: Vec::new(),
    };
    for piece in input.chunks(step.max(1)) {
        let mut got = conn.feed(piece);
        loop {
            match got {
                Ok(Some(request)) => {
                    out.requests.push((
                        String::from_utf8_lossy(request.method()).into_owned(),
                        String::from_utf8_lossy(request.target()).into_owned(),
                        request.body().to_vec(),
                    ));
                    conn.respond(
                        200,
                        &[(b"content-type", b"text/plain")],
                        b"ok",
                        false,
                        &mut out.written,
                    )
                    .unwrap();
                    got = conn.next_request();
                }
                Ok(None) => break,
                Err(refusal) => {
                    assert!(out.refused.is_none(), "refused twice");
                    out.refused = Some(refusal.status);
                    out.written.extend_from_slice(&response::refusal(&refusal));
                    break;
                }
            }
        }
        if conn.take_continue() {
            out.written.extend_from_slice(response::CONTINUE);
        }
    }
    out.closed = conn.is_closed();
    out
}

/// Runs `input` fed whole and byte by byte; both must agree (the interim 100 Continue aside,
/// which depends on whether the body came with the head).
fn check(limits: Limits, input: &[u8]) -> Outcome {
    let whole = run(limits, input, input.len());
    let bytes = run(limits, input, 1);
    assert_eq!(
        whole.requests,
        bytes.requests,
        "requests differ by split: {:?}",
        String::from_utf8_lossy(input)
    );
    assert_eq!(
        whole.refused,
        bytes.refused,
        "verdict differs by split: {:?}",
        String::from_utf8_lossy(input)
    );
    assert_eq!(whole.closed, bytes.closed);
    whole
}

const GET: &str = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";

/// (name, input, requests handed out, refusal status: None accepted, Some(None) closed with no
/// answer). Every refused row ends with a valid request that must never be read.
const REFUSED: &[(&str, &str, usize, Option<u16>)] = &[
    ("both Content-Length and Transfer-Encoding", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 0, Some(400)),
    ("Transfer-Encoding then Content-Length", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n0\r\n\r\n", 0, Some(400)),
    ("differing Content-Length fields", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", 0, Some(400)),
    ("differing Content-Length list", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 6\r\n\r\nhello!", 0, Some(400)),
    ("empty Content-Length list item", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5,\r\n\r\nhello", 0, Some(400)),
    ("signed Content-Length +", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\nhello", 0, Some(400)),
    ("signed Content-Length -", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -5\r\n\r\nhello", 0, Some(400)),
    ("spaced Content-Length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1 2\r\n\r\nhello", 0, Some(400)),
    ("hex Content-Length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x5\r\n\r\nhello", 0, Some(400)),
    ("decimal point Content-Length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5.0\r\n\r\nhello", 0, Some(400)),
    ("empty Content-Length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n", 0, Some(400)),
    ("unknown transfer coding", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 0, Some(501)),
    ("coding before chunked", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 0, Some(501)),
    ("identity coding", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n", 0, Some(501)),
    ("empty Transfer-Encoding", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n\r\n", 0, Some(501)),
    ("chunked twice in a list", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", 0, Some(400)),
    ("chunked in two fields", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 0, Some(400)),
    ("chunked in HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 0, Some(400)),
    ("chunk size overflows", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000005\r\nhello\r\n0\r\n\r\n", 0, Some(400)),
    ("chunk size 0x", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n", 0, Some(400)),
    ("chunk size signed", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n+5\r\nhello\r\n0\r\n\r\n", 0, Some(400)),
    ("chunk size empty", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n\r\nhello\r\n0\r\n\r\n", 0, Some(400)),
    ("chunk data without CRLF", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloX\r\n0\r\n\r\n", 0, Some(400)),
    ("chunk data with a bare LF", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\n0\r\n\r\n", 0, Some(400)),
    ("chunk size line with a bare LF", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n", 0, Some(400)),
    ("chunk longer than its size", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n", 0, Some(400)),
    ("malformed trailer", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nno colon\r\n\r\n", 0, Some(400)),
    ("obs-fold", "GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n  2\r\n\r\n", 0, Some(400)),
    ("obs-fold at the first field", "GET / HTTP/1.1\r\n Host: a\r\n\r\n", 0, Some(400)),
    ("space before a colon", "GET / HTTP/1.1\r\nHost : a\r\n\r\n", 0, Some(400)),
    ("tab before a colon", "GET / HTTP/1.1\r\nHost\t: a\r\n\r\n", 0, Some(400)),
    ("NUL in a value", "GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\x002\r\n\r\n", 0, Some(400)),
    ("CR in a value", "GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r2\r\n\r\n", 0, Some(400)),
    ("LF in a value", "GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\n2\r\n\r\n", 0, Some(400)),
    ("control byte in a value", "GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\x012\r\n\r\n", 0, Some(400)),
    ("DEL in a value", "GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\x7f2\r\n\r\n", 0, Some(400)),
    ("missing Host in 1.1", "GET / HTTP/1.1\r\nX-A: 1\r\n\r\n", 0, Some(400)),
    ("doubled Host in 1.1", "GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 0, Some(400)),
    ("doubled Host in 1.0", "GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", 0, Some(400)),
    ("HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 0, None),
    ("HTTP/1.2", "GET / HTTP/1.2\r\nHost: a\r\n\r\n", 0, Some(505)),
    ("HTTP/2.0 request line", "GET / HTTP/2.0\r\nHost: a\r\n\r\n", 0, Some(505)),
    ("a space in the target", "GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", 0, Some(400)),
    ("lower-case version", "GET / http/1.1\r\nHost: a\r\n\r\n", 0, Some(400)),
    ("two spaces in the request line", "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 0, Some(400)),
    ("non-ASCII target", "GET /\u{e9} HTTP/1.1\r\nHost: a\r\n\r\n", 0, Some(400)),
    ("no target", "GET HTTP/1.1\r\nHost: a\r\n\r\n", 0, Some(400)),
    ("bad method byte", "G(T / HTTP/1.1\r\nHost: a\r\n\r\n", 0, Some(400)),
    ("a bare CR line ending", "GET / HTTP/1.1\rHost: a\r\n\r\n", 0, Some(400)),
    ("a valid request then a bad one", "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\n\r\n", 1, Some(400)),
];

#[test]
fn refused_and_final() {
    for &(name, input, handed, status) in REFUSED {
        let stream = format!("{input}{GET}{GET}");
        let got = check(Limits::default(), stream.as_bytes());
        assert_eq!(got.requests.len(), handed, "{name}: {got:?}");
        let want = match status {
            Some(s) => Some(Some(s)),
            None => Some(None),
        };
        assert_eq!(got.refused, want, "{name}: {:?}", got.requests);
        assert!(got.closed, "{name}: not closed");
        if let Some(s) = status {
            let tail = String::from_utf8_lossy(&got.written).into_owned();
            assert!(tail.contains(&format!("HTTP/1.1 {s} ")), "{name}: {tail}");
            assert!(tail.ends_with(&tail[tail.rfind("\r\n\r\n").unwrap()..]));
            assert!(tail.contains("connection: close\r\n"), "{name}: {tail}");
        } else {
            assert!(got.written.is_empty(), "{name}: answered an HTTP/2 client");
        }
    }
}

#[test]
fn accepted() {
    type Row = (
        &'static str,
        &'static str,
        &'static [(&'static str, &'static str, &'static [u8])],
    );
    let cases: &[Row] = &[
        ("plain GET", GET, &[("GET", "/", b"")]),
        ("the same Content-Length twice", "POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello", &[("POST", "/p", b"hello")]),
        ("the same Content-Length in a list", "POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 5 , 5\r\n\r\nhello", &[("POST", "/p", b"hello")]),
        ("leading zeros", "POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 005\r\n\r\nhello", &[("POST", "/p", b"hello")]),
        ("chunked, any case", "POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: ChUnKeD\r\n\r\n5\r\nhello\r\n6;ext=\"1\"\r\n world\r\n0\r\nT: 1\r\n\r\n", &[("POST", "/c", b"hello world")]),
        ("chunk size with leading zeros and whitespace", "POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0005 \r\nhello\r\n000\r\n\r\n", &[("POST", "/c", b"hello")]),
        ("HTTP/1.0 without Host", "GET /x HTTP/1.0\r\n\r\n", &[("GET", "/x", b"")]),
        ("empty lines before the request line", "\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", &[("GET", "/", b"")]),
        ("bare LF line endings", "GET / HTTP/1.1\nHost: a\n\n", &[("GET", "/", b"")]),
        ("empty Host (no authority)", "GET / HTTP/1.1\r\nHost:\r\n\r\n", &[("GET", "/", b"")]),
        ("obs-text in a value", "GET / HTTP/1.1\r\nHost: a\r\nX: caf\u{e9}\r\n\r\n", &[("GET", "/", b"")]),
        ("pipelined, in order, each once",
         "POST /1 HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\naGET /2 HTTP/1.1\r\nHost: a\r\n\r\nPOST /3 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nc\r\n0\r\n\r\n",
         &[("POST", "/1", b"a"), ("GET", "/2", b""), ("POST", "/3", b"c")]),
    ];
    for (name, input, want) in cases {
        let got = check(Limits::default(), input.as_bytes());
        let want: Vec<_> = want
            .iter()
            .map(|(m, t, b)| (m.to_string(), t.to_string(), b.to_vec()))
            .collect();
        assert_eq!(got.requests, want, "{name}");
        assert_eq!(got.refused, None, "{name}");
        // HTTP/1.0 closes after its response by default.
        assert_eq!(got.closed, input.contains("HTTP/1.0"), "{name}");
    }
}

#[test]
fn limits() {
    let small = Limits {
        max_line: 64,
        max_head: 256,
        max_headers: 4,
        max_body: 10,
        max_chunk_line: 16,
        max_trailers: 64,
        max_buffer: 1024,
    };
    let long_value = "v".repeat(60);
    let cases: Vec<(&str, String, Option<u16>)> = vec![
        ("a line at the limit", format!("GET / HTTP/1.1\r\nHost: a\r\nX: {}\r\n\r\n", "v".repeat(61)), None),
        ("a line over the limit", format!("GET / HTTP/1.1\r\nHost: a\r\nX: {}\r\n\r\n", "v".repeat(62)), Some(431)),
        ("a request line over the limit", format!("GET /{} HTTP/1.1\r\nHost: a\r\n\r\n", "p".repeat(60)), Some(431)),
        ("a head over the limit", format!("GET / HTTP/1.1\r\nHost: a\r\nA: {long_value}\r\nB: {long_value}\r\nC: {long_value}\r\nD: {long_value}\r\n\r\n"), Some(431)),
        ("a head of empty lines", "\r\n".repeat(200), Some(431)),
        ("a line with no end", "G".repeat(100), Some(431)),
        ("fields at the limit", "GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 1\r\nC: 1\r\n\r\n".to_string(), None),
        ("too many fields", "GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 1\r\nC: 1\r\nD: 1\r\n\r\n".to_string(), Some(431)),
        ("a body at the limit", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n0123456789".to_string(), None),
        ("a declared body over the limit", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\n".to_string(), Some(413)),
        ("a huge declared body", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999999999\r\n\r\n".to_string(), Some(413)),
        ("chunks over the limit", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n".to_string(), Some(413)),
        ("a chunk line over the limit", format!("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1;{}\r\n", "e".repeat(15)), Some(400)),
        ("a chunk line at the limit", format!("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1;{}\r\nx\r\n0\r\n\r\n", "e".repeat(14)), None),
        ("trailers over the limit", format!("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA: {long_value}\r\n\r\n"), Some(431)),
        ("too many trailer fields", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA: 1\r\nB: 1\r\nC: 1\r\nD: 1\r\nE: 1\r\n\r\n".to_string(), Some(431)),
    ];
    for (name, input, status) in cases {
        let got = check(small, input.as_bytes());
        assert_eq!(got.refused, status.map(Some), "{name}: {got:?}");
        // Never more held than the limits allow (one byte at a time, checked after each).
        let mut conn = ServerConnection::new(small);
        for b in input.as_bytes() {
            if conn.feed(std::slice::from_ref(b)).is_err() {
                break;
            }
            assert!(
                conn.buffered() <= small.max_head + small.max_line + small.max_body as usize,
                "{name}"
            );
        }
    }
}

#[test]
fn phases_and_continue() {
    let mut conn = ServerConnection::new(Limits::default());
    assert_eq!(conn.phase(), Phase::Idle);
    assert_eq!(conn.feed(b"POST / HTTP/1.1\r\nHo").unwrap(), None);
    assert_eq!(conn.phase(), Phase::Head);
    assert!(!conn.take_continue());
    let head = b"st: a\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n";
    assert_eq!(conn.feed(head).unwrap(), None);
    assert_eq!(conn.phase(), Phase::Body);
    assert!(conn.take_continue());
    assert!(!conn.take_continue(), "100 Continue is due once");
    let request = conn.feed(b"abc").unwrap().expect("complete");
    assert!(request.expects_continue());
    assert_eq!(request.body(), b"abc");
    assert_eq!(conn.phase(), Phase::Responding);
    // Pipelined input is held, not parsed, while the response is outstanding.
    assert_eq!(conn.feed(GET.as_bytes()).unwrap(), None);
    assert_eq!(conn.buffered(), GET.len());
    let mut out = Vec::new();
    conn.respond(200, &[], b"", false, &mut out).unwrap();
    assert_eq!(out, b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
    assert!(conn.next_request().unwrap().is_some());

    // The body came with the head: no 100 Continue is due.
    let mut conn = ServerConnection::new(Limits::default());
    let req = conn
        .feed(b"POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx")
        .unwrap();
    assert!(req.is_some());
    assert!(!conn.take_continue());

    // HTTP/1.0: Expect is ignored (RFC 9110 10.1.1).
    let mut conn = ServerConnection::new(Limits::default());
    assert_eq!(
        conn.feed(b"POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n")
            .unwrap(),
        None
    );
    assert!(!conn.take_continue());
}

fn answer(conn: &mut ServerConnection, input: &[u8], close: bool) -> (Vec<u8>, bool) {
    let request = conn.feed(input).unwrap().expect("a request");
    let mut out = Vec::new();
    conn.respond(200, &[(b"x-a", b"1")], b"hi", close, &mut out)
        .unwrap();
    let _ = request;
    (out, conn.is_closed())
}

#[test]
fn keep_alive() {
    let cases: &[(&str, &str, bool, &str, bool)] = &[
        (
            "1.1 default",
            GET,
            false,
            "HTTP/1.1 200 OK\r\nx-a: 1\r\ncontent-length: 2\r\n\r\nhi",
            false,
        ),
        (
            "1.1 Connection: close",
            "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
            false,
            "HTTP/1.1 200 OK\r\nx-a: 1\r\ncontent-length: 2\r\nconnection: close\r\n\r\nhi",
            true,
        ),
        (
            "1.1 close in a token list",
            "GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade, CLOSE\r\n\r\n",
            false,
            "HTTP/1.1 200 OK\r\nx-a: 1\r\ncontent-length: 2\r\nconnection: close\r\n\r\nhi",
            true,
        ),
        (
            "1.1 closed by the server",
            GET,
            true,
            "HTTP/1.1 200 OK\r\nx-a: 1\r\ncontent-length: 2\r\nconnection: close\r\n\r\nhi",
            true,
        ),
        (
            "1.0 default",
            "GET / HTTP/1.0\r\n\r\n",
            false,
            "HTTP/1.1 200 OK\r\nx-a: 1\r\ncontent-length: 2\r\nconnection: close\r\n\r\nhi",
            true,
        ),
        (
            "1.0 keep-alive",
            "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n",
            false,
            "HTTP/1.1 200 OK\r\nx-a: 1\r\ncontent-length: 2\r\nconnection: keep-alive\r\n\r\nhi",
            false,
        ),
        (
            "HEAD has no body",
            "HEAD / HTTP/1.1\r\nHost: a\r\n\r\n",
            false,
            "HTTP/1.1 200 OK\r\nx-a: 1\r\ncontent-length: 2\r\n\r\n",
            false,
        ),
    ];
    for (name, input, close, want, closed) in cases {
        let mut conn = ServerConnection::new(Limits::default());
        let (out, is_closed) = answer(&mut conn, input.as_bytes(), *close);
        assert_eq!(String::from_utf8_lossy(&out), *want, "{name}");
        assert_eq!(is_closed, *closed, "{name}");
        if *closed {
            // Nothing is read after a connection closes, however valid.
            assert_eq!(conn.feed(GET.as_bytes()).unwrap(), None, "{name}");
            assert_eq!(conn.phase(), Phase::Closed);
        }
    }
    // Leftovers after Connection: close are never read.
    let stream = format!("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n{GET}");
    let got = check(Limits::default(), stream.as_bytes());
    assert_eq!(got.requests.len(), 1);
    assert!(got.closed);
}

#[test]
fn streams() {
    let mut conn = ServerConnection::new(Limits::default());
    conn.feed(GET.as_bytes()).unwrap().unwrap();
    let mut out = Vec::new();
    conn.start_stream(
        200,
        &[(b"content-type", b"text/event-stream")],
        false,
        &mut out,
    )
    .unwrap();
    conn.stream_data(b"data: 1\n\n", &mut out).unwrap();
    conn.stream_data(b"", &mut out).unwrap();
    conn.end_stream(&mut out).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out),
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n9\r\ndata: 1\n\n\r\n0\r\n\r\n"
    );
    assert_eq!(conn.phase(), Phase::Idle);

    // HTTP/1.0 gets a close-delimited stream.
    let mut conn = ServerConnection::new(Limits::default());
    conn.feed(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        .unwrap()
        .unwrap();
    let mut out = Vec::new();
    conn.start_stream(200, &[], false, &mut out).unwrap();
    conn.stream_data(b"data: 1\n\n", &mut out).unwrap();
    conn.end_stream(&mut out).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out),
        "HTTP/1.1 200 OK\r\nconnection: close\r\n\r\ndata: 1\n\n"
    );
    assert!(conn.is_closed());
}

#[test]
fn writer_misuse() {
    let mut conn = ServerConnection::new(Limits::default());
    let mut out = Vec::new();
    assert_eq!(
        conn.respond(200, &[], b"", false, &mut out),
        Err(WriteError::NoRequest)
    );
    conn.feed(GET.as_bytes()).unwrap().unwrap();
    assert_eq!(conn.stream_data(b"x", &mut out), Err(WriteError::NoStream));
    assert_eq!(
        conn.respond(100, &[], b"", false, &mut out),
        Err(WriteError::Status(100))
    );
    assert_eq!(
        conn.respond(204, &[], b"x", false, &mut out),
        Err(WriteError::BodyNotAllowed(204))
    );
    assert_eq!(
        conn.respond(200, &[(b"x", b"1\r\nSet-Cookie: a")], b"", false, &mut out),
        Err(WriteError::FieldValue(b"x".to_vec()))
    );
    assert!(out.is_empty(), "nothing written by a refused response");
    conn.respond(204, &[], b"", false, &mut out).unwrap();
    assert_eq!(out, b"HTTP/1.1 204 No Content\r\n\r\n");
    assert_eq!(
        conn.respond(200, &[], b"", false, &mut out),
        Err(WriteError::NoRequest)
    );
}

#[test]
fn pause_hint() {
    let limits = Limits {
        max_buffer: 100,
        ..Limits::default()
    };
    let mut conn = ServerConnection::new(limits);
    conn.feed(GET.as_bytes()).unwrap().unwrap();
    assert!(!conn.wants_pause());
    conn.feed(GET.repeat(4).as_bytes()).unwrap();
    assert!(conn.wants_pause());
    let mut out = Vec::new();
    conn.respond(200, &[], b"", false, &mut out).unwrap();
    assert!(!conn.wants_pause());
    for _ in 0..4 {
        conn.next_request().unwrap().unwrap();
        conn.respond(200, &[], b"", false, &mut out).unwrap();
    }
    assert_eq!(conn.next_request().unwrap(), None);
    assert_eq!(conn.buffered(), 0);
}

#[test]
fn request_fields() {
    let mut conn = ServerConnection::new(Limits::default());
    let req = conn
        .feed(b"POST /mcp?x=1 HTTP/1.1\r\nHost: h\r\nMcp-Session-Id:  abc \r\nX-Multi: 1\r\nx-multi: 2\r\nEmpty:\r\nContent-Length: 2\r\n\r\n{}")
        .unwrap()
        .unwrap();
    assert_eq!(req.method(), b"POST");
    assert_eq!(req.target(), b"/mcp?x=1");
    assert_eq!(req.header(b"mcp-session-id"), Some(&b"abc"[..]));
    assert_eq!(req.header(b"HOST"), Some(&b"h"[..]));
    assert_eq!(req.header(b"empty"), Some(&b""[..]));
    assert_eq!(req.header(b"absent"), None);
    assert_eq!(
        req.header_all(b"x-multi").collect::<Vec<_>>(),
        vec![&b"1"[..], &b"2"[..]]
    );
    assert_eq!(req.header_items().count(), 6);
    assert_eq!(req.body(), b"{}");
    assert!(req.keep_alive());
}

fn client_events(
    input: &[u8],
    step: usize,
    method: &[u8],
    stream: bool,
) -> Result<Vec<ClientEvent>, Refusal> {
    let mut conn = ClientConnection::new(Limits::default());
    let mut out = Vec::new();
    conn.write_request(
        method,
        b"/mcp",
        &[(b"host", b"h")],
        Some(b"{}"),
        stream,
        &mut out,
    )
    .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out),
        format!(
            "{} /mcp HTTP/1.1\r\nhost: h\r\ncontent-length: 2\r\n\r\n{{}}",
            String::from_utf8_lossy(method)
        )
    );
    let mut events = Vec::new();
    for piece in input.chunks(step) {
        conn.feed(piece);
        while let Some(e) = conn.next_event()? {
            events.push(e);
        }
    }
    conn.feed_eof();
    while let Some(e) = conn.next_event()? {
        events.push(e);
    }
    Ok(events)
}

/// Streamed events with the data joined (how data is split depends on the reads).
fn joined(events: Vec<ClientEvent>) -> (Vec<u16>, Vec<u8>, usize) {
    let mut statuses = Vec::new();
    let mut data = Vec::new();
    let mut ends = 0;
    for e in events {
        match e {
            ClientEvent::Response(r) => {
                statuses.push(r.status());
                data.extend_from_slice(r.body());
                ends += 1;
            }
            ClientEvent::Head(r) => statuses.push(r.status()),
            ClientEvent::Data(d) => data.extend_from_slice(&d),
            ClientEvent::End => ends += 1,
        }
    }
    (statuses, data, ends)
}

#[test]
fn client_responses() {
    /// (name, response bytes, request method, Ok((status, body)) or Err: an error).
    type Row = (
        &'static str,
        &'static str,
        &'static [u8],
        Result<(u16, &'static [u8]), ()>,
    );
    let cases: &[Row] = &[
        (
            "length",
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
            b"POST",
            Ok((200, b"hello")),
        ),
        (
            "chunked",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhel\r\n2\r\nlo\r\n0\r\n\r\n",
            b"POST",
            Ok((200, b"hello")),
        ),
        (
            "until close",
            "HTTP/1.0 200 OK\r\n\r\nhello",
            b"POST",
            Ok((200, b"hello")),
        ),
        (
            "100 Continue skipped",
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n",
            b"POST",
            Ok((202, b"")),
        ),
        (
            "HEAD",
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n",
            b"HEAD",
            Ok((200, b"")),
        ),
        (
            "204",
            "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n",
            b"POST",
            Ok((204, b"")),
        ),
        (
            "cut short",
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel",
            b"POST",
            Err(()),
        ),
        (
            "cut in chunks",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhel",
            b"POST",
            Err(()),
        ),
        (
            "conflicting lengths",
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 4\r\n\r\nhello",
            b"POST",
            Err(()),
        ),
        (
            "gzip coding",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nhello",
            b"POST",
            Err(()),
        ),
        ("not HTTP", "SSH-2.0-OpenSSH\r\n\r\n", b"POST", Err(())),
        (
            "switching protocols",
            "HTTP/1.1 101 Switching Protocols\r\n\r\n",
            b"POST",
            Err(()),
        ),
    ];
    for (name, input, method, want) in cases {
        for stream in [false, true] {
            for step in [input.len(), 1] {
                let got = client_events(input.as_bytes(), step.max(1), method, stream).map(joined);
                match want {
                    Ok((status, body)) => {
                        let (statuses, data, ends) =
                            got.unwrap_or_else(|e| panic!("{name}: {e:?}"));
                        assert_eq!(statuses, vec![*status], "{name}");
                        assert_eq!(data, *body, "{name}");
                        assert_eq!(ends, 1, "{name}");
                    }
                    Err(()) => assert!(got.is_err(), "{name} stream={stream} step={step}: {got:?}"),
                }
            }
        }
    }
}

#[test]
fn client_streams_as_data_arrives() {
    let mut conn = ClientConnection::new(Limits::default());
    let mut out = Vec::new();
    conn.write_request(b"GET", b"/mcp", &[(b"host", b"h")], None, true, &mut out)
        .unwrap();
    conn.feed(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n",
    );
    let Some(ClientEvent::Head(head)) = conn.next_event().unwrap() else {
        panic!("no head")
    };
    assert_eq!(
        head.header(b"content-type"),
        Some(&b"text/event-stream"[..])
    );
    assert_eq!(conn.next_event().unwrap(), None);
    conn.feed(b"9\r\ndata: 1\n\n\r\n");
    assert_eq!(
        conn.next_event().unwrap(),
        Some(ClientEvent::Data(b"data: 1\n\n".to_vec()))
    );
    assert_eq!(conn.next_event().unwrap(), None);
    conn.feed(b"9\r\ndata: 2\n\n\r\n0\r\n\r\n");
    assert_eq!(
        conn.next_event().unwrap(),
        Some(ClientEvent::Data(b"data: 2\n\n".to_vec()))
    );
    assert_eq!(conn.next_event().unwrap(), Some(ClientEvent::End));
    assert!(conn.is_idle());
    assert_eq!(
        conn.write_request(b"GET", b"/", &[], None, false, &mut out),
        Ok(())
    );
    assert_eq!(
        conn.write_request(b"GET", b"/", &[], None, false, &mut out),
        Err(WriteError::Busy)
    );
}
