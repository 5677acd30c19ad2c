//! Fuzzing of the HTTP/1.1 connection machines with generated and mutated byte streams.
//!
//! Server side, for every stream (pipelined requests, valid or mutated):
//! * nothing panics;
//! * the requests handed out (method, target, fields, body, keep-alive) and the final verdict
//!   are the same whether the stream is fed whole, one byte at a time, or at random splits;
//! * an unmutated stream yields exactly the requests it was made of, in order, each once, up
//!   to the first that closes the connection;
//! * after each feed the bytes held stay within the limits (the harness answers each request
//!   at once, as the fast path does);
//! * after a refusal nothing more is handed out, whatever follows.
//!
//! Client side: responses (Content-Length, chunked, close-delimited, interim 1xx), valid or
//! mutated, give the same status, body and verdict however they are split, whole or streamed.
//!
//! Deterministic: `JETMCP_HTTP1_FUZZ_ITERS` sets the number of streams (default below),
//! `JETMCP_HTTP1_FUZZ_SEED` the seed; a failure prints both and the stream.

use jetmcp_wire::http1::client::{ClientConnection, ClientEvent};
use jetmcp_wire::http1::server::ServerConnection;
use jetmcp_wire::http1::{Limits, Phase};

/// Streams per CI run (a few seconds in the test profile).
const DEFAULT_ITERS: u64 = 4_000;
const DEFAULT_SEED: u64 = 0x6874_7470_312d_6675;

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be an unsigned integer, not {v:?}")),
        Err(_) => default,
    }
}

/// A counter-based generator (the splitmix64 finaliser over a Weyl sequence).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut x = self.0;
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^ (x >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// What a request must come out as.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    method: Vec<u8>,
    target: Vec<u8>,
    fields: Vec<(Vec<u8>, Vec<u8>)>,
    body: Vec<u8>,
    keep_alive: bool,
}

const TOKEN: &[u8] =
    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-.^_`|~";

fn token(rng: &mut Rng, max: usize) -> Vec<u8> {
    (0..1 + rng.below(max)).map(|_| *rng.pick(TOKEN)).collect()
}

/// A field value: no leading or trailing whitespace (the parser strips it), sometimes
/// obs-text and inner tabs.
fn value(rng: &mut Rng) -> Vec<u8> {
    let len = rng.below(24);
    let mut v: Vec<u8> = (0..len)
        .map(|_| match rng.below(20) {
            0 => b' ',
            1 => b'\t',
            2 => 0x80 + rng.below(128) as u8,
            _ => b'!' + rng.below(94) as u8,
        })
        .collect();
    while matches!(v.first(), Some(b' ' | b'\t')) {
        v.remove(0);
    }
    while matches!(v.last(), Some(b' ' | b'\t')) {
        v.pop();
    }
    v
}

fn body(rng: &mut Rng, max: usize) -> Vec<u8> {
    (0..rng.below(max + 1)).map(|_| rng.next() as u8).collect()
}

/// One generated request: its bytes, and what it must come out as.
fn request(rng: &mut Rng, limits: &Limits) -> (Vec<u8>, Seen) {
    let eol: &[u8] = if rng.one_in(8) { b"\n" } else { b"\r\n" };
    let mut out = Vec::new();
    for _ in 0..(if rng.one_in(10) { 1 + rng.below(2) } else { 0 }) {
        out.extend_from_slice(eol);
    }
    let method = rng
        .pick(&[
            &b"GET"[..],
            b"POST",
            b"POST",
            b"PUT",
            b"DELETE",
            b"OPTIONS",
            b"X-CUSTOM",
        ])
        .to_vec();
    let mut target = b"/".to_vec();
    for _ in 0..rng.below(20) {
        target.push(b'!' + rng.below(94) as u8);
    }
    let http10 = rng.one_in(6);
    out.extend_from_slice(&method);
    out.push(b' ');
    out.extend_from_slice(&target);
    out.extend_from_slice(if http10 { b" HTTP/1.0" } else { b" HTTP/1.1" });
    out.extend_from_slice(eol);

    let mut fields: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    if !http10 || rng.one_in(2) {
        fields.push((b"Host".to_vec(), value(rng)));
    }
    for _ in 0..rng.below(6) {
        let mut name = token(rng, 12);
        // Keep clear of the framing fields, which are added on purpose below.
        name.insert(0, b'X');
        name.insert(1, b'-');
        fields.push((name, value(rng)));
    }
    let keep_alive = if http10 {
        if rng.one_in(2) {
            fields.push((b"Connection".to_vec(), b"keep-alive".to_vec()));
            true
        } else {
            false
        }
    } else if rng.one_in(12) {
        fields.push((b"Connection".to_vec(), b"close".to_vec()));
        false
    } else {
        true
    };
    let data = body(rng, (limits.max_body as usize).min(300));
    let chunked = !http10 && !data.is_empty() && rng.one_in(3);
    if chunked {
        fields.push((b"Transfer-Encoding".to_vec(), b"chunked".to_vec()));
    } else if !data.is_empty() || rng.one_in(3) {
        fields.push((
            b"Content-Length".to_vec(),
            data.len().to_string().into_bytes(),
        ));
    }
    // Shuffle the field order.
    for i in (1..fields.len()).rev() {
        let j = rng.below(i + 1);
        fields.swap(i, j);
    }
    for (name, value) in &fields {
        out.extend_from_slice(name);
        out.push(b':');
        if rng.one_in(2) {
            out.push(b' ');
        }
        out.extend_from_slice(value);
        if rng.one_in(8) {
            out.push(b'\t');
        }
        out.extend_from_slice(eol);
    }
    out.extend_from_slice(eol);
    if chunked {
        let mut rest = &data[..];
        while !rest.is_empty() {
            let n = 1 + rng.below(rest.len());
            let size = format!("{n:x}");
            out.extend_from_slice(
                if rng.one_in(4) {
                    size.to_uppercase()
                } else {
                    size
                }
                .as_bytes(),
            );
            if rng.one_in(5) {
                out.extend_from_slice(b";name=\"v a l\"");
            }
            out.extend_from_slice(b"\r\n");
            out.extend_from_slice(&rest[..n]);
            out.extend_from_slice(b"\r\n");
            rest = &rest[n..];
        }
        out.extend_from_slice(b"0\r\n");
        if rng.one_in(4) {
            out.extend_from_slice(b"X-Trailer: t\r\n");
        }
        out.extend_from_slice(b"\r\n");
    } else {
        out.extend_from_slice(&data);
    }
    let seen = Seen {
        method,
        target,
        fields,
        body: data,
        keep_alive,
    };
    (out, seen)
}

/// Changes a stream the way a broken or hostile peer would.
fn mutate(rng: &mut Rng, stream: &mut Vec<u8>) {
    const SPECIAL: &[u8] = b"\r\n\0 \t:;,0123456789abcdefxX-+\x7f\x80\xff";
    const SNIPPETS: &[&[u8]] = &[
        b"\r\n",
        b"\r\n\r\n",
        b"\n",
        b"Content-Length: 3\r\n",
        b"Content-Length: 99999999999999999999\r\n",
        b"Transfer-Encoding: chunked\r\n",
        b"Transfer-Encoding: gzip\r\n",
        b"Host: x\r\n",
        b" folded\r\n",
        b"Expect: 100-continue\r\n",
        b"Connection: close\r\n",
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        b"0\r\n\r\n",
        b"ffffffffffffffffff\r\n",
        b"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
    ];
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(stream.len() + 1);
        match rng.below(6) {
            0 if !stream.is_empty() => {
                let i = rng.below(stream.len());
                stream[i] = *rng.pick(SPECIAL);
            }
            1 => stream.insert(at, *rng.pick(SPECIAL)),
            2 => {
                let s = rng.pick(SNIPPETS);
                stream.splice(at..at, s.iter().copied());
            }
            3 if !stream.is_empty() => {
                let end = (at + 1 + rng.below(16)).min(stream.len());
                let at = at.min(end);
                stream.drain(at..end);
            }
            4 if !stream.is_empty() => {
                let end = (at + 1 + rng.below(40)).min(stream.len());
                let at = at.min(end);
                let copy = stream[at..end].to_vec();
                stream.splice(end..end, copy);
            }
            _ => stream.truncate(at),
        }
    }
}

/// What a server connection made of a stream.
#[derive(Debug, PartialEq, Eq)]
struct Verdict {
    requests: Vec<Seen>,
    refused: Option<Option<u16>>,
    closed: bool,
}

fn seen(request: &jetmcp_wire::http1::server::Request) -> Seen {
    Seen {
        method: request.method().to_vec(),
        target: request.target().to_vec(),
        fields: request
            .header_items()
            .map(|(n, v)| (n.to_vec(), v.to_vec()))
            .collect(),
        body: request.body().to_vec(),
        keep_alive: request.keep_alive(),
    }
}

/// Feeds `stream` in the pieces `cuts` makes (sorted offsets), answering each request at once.
fn serve(limits: Limits, stream: &[u8], cuts: &[usize], report: &dyn Fn() -> String) -> Verdict {
    let mut conn = ServerConnection::new(limits);
    let mut verdict = Verdict {
        requests: Vec::new(),
        refused: None,
        closed: false,
    };
    let bound = limits.max_head
        + limits.max_body as usize
        + limits.max_chunk_line.max(limits.max_trailers)
        + 2;
    let mut from = 0;
    for &to in cuts.iter().chain(std::iter::once(&stream.len())) {
        let mut got = conn.feed(&stream[from..to]);
        from = to;
        loop {
            match got {
                Ok(Some(request)) => {
                    assert!(
                        verdict.refused.is_none(),
                        "a request after a refusal\n{}",
                        report()
                    );
                    verdict.requests.push(seen(&request));
                    let mut out = Vec::new();
                    conn.respond(200, &[], b"ok", false, &mut out).unwrap();
                    got = conn.next_request();
                }
                Ok(None) => break,
                Err(refusal) => {
                    assert!(verdict.refused.is_none(), "refused twice\n{}", report());
                    assert!(conn.is_closed());
                    verdict.refused = Some(refusal.status);
                    break;
                }
            }
        }
        assert!(
            conn.buffered() <= bound,
            "{} bytes held (bound {bound})\n{}",
            conn.buffered(),
            report()
        );
        assert_ne!(conn.phase(), Phase::Responding, "{}", report());
        let _ = conn.take_continue();
    }
    verdict.closed = conn.is_closed();
    verdict
}

fn limits_for(rng: &mut Rng) -> Limits {
    if rng.one_in(3) {
        Limits {
            max_line: 16 + rng.below(80),
            max_head: 64 + rng.below(400),
            max_headers: 1 + rng.below(8),
            max_body: rng.below(200) as u64,
            max_chunk_line: 4 + rng.below(30),
            max_trailers: 4 + rng.below(60),
            max_buffer: 1 + rng.below(1000),
        }
    } else {
        Limits::default()
    }
}

fn random_cuts(rng: &mut Rng, len: usize) -> Vec<usize> {
    let mut cuts: Vec<usize> = (0..rng.below(8)).map(|_| rng.below(len + 1)).collect();
    cuts.sort_unstable();
    cuts
}

#[test]
fn server_streams() {
    let iters = env_u64("JETMCP_HTTP1_FUZZ_ITERS", DEFAULT_ITERS);
    let seed = env_u64("JETMCP_HTTP1_FUZZ_SEED", DEFAULT_SEED);
    let mut rng = Rng(seed);
    let mut refused = 0;
    for i in 0..iters {
        let limits = limits_for(&mut rng);
        let mut stream = Vec::new();
        let mut expected = Vec::new();
        let mut open = true;
        for _ in 0..1 + rng.below(4) {
            let (bytes, want) = request(&mut rng, &limits);
            stream.extend_from_slice(&bytes);
            if open {
                open = want.keep_alive;
                expected.push(want);
            }
        }
        let mutated = rng.one_in(2);
        if mutated {
            mutate(&mut rng, &mut stream);
        }
        let report = || {
            format!(
                "iteration {i} of JETMCP_HTTP1_FUZZ_SEED={seed} (mutated: {mutated}, limits {limits:?}):\n{:?}",
                String::from_utf8_lossy(&stream)
            )
        };
        let whole = serve(limits, &stream, &[], &report);
        let bytes: Vec<usize> = (1..stream.len()).collect();
        let one = serve(limits, &stream, &bytes, &report);
        let cuts = random_cuts(&mut rng, stream.len());
        let split = serve(limits, &stream, &cuts, &report);
        assert_eq!(whole, one, "fed whole vs byte by byte\n{}", report());
        assert_eq!(whole, split, "fed whole vs at {cuts:?}\n{}", report());
        if whole.refused.is_some() {
            refused += 1;
        }
        if !mutated && limits == Limits::default() {
            assert_eq!(whole.refused, None, "a valid stream refused\n{}", report());
            assert_eq!(whole.requests, expected, "{}", report());
            assert_eq!(whole.closed, !expected.last().is_none_or(|r| r.keep_alive));
        }
    }
    // The generator must reach the refusals, not only the happy path.
    assert!(
        refused > iters / 10,
        "only {refused} of {iters} streams refused"
    );
}

/// A generated response and its expected (status, body), for a request of `method`.
fn response(rng: &mut Rng, head_method: bool) -> (Vec<u8>, u16, Vec<u8>, bool) {
    let mut out = Vec::new();
    if rng.one_in(5) {
        out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
    }
    let status = *rng.pick(&[200u16, 200, 202, 204, 400, 404, 500]);
    out.extend_from_slice(format!("HTTP/1.1 {status} Reason\r\n").as_bytes());
    for _ in 0..rng.below(4) {
        let mut name = token(rng, 10);
        name.insert(0, b'X');
        out.extend_from_slice(&name);
        out.extend_from_slice(b": ");
        out.extend_from_slice(&value(rng));
        out.extend_from_slice(b"\r\n");
    }
    let data = if status == 204 || head_method {
        Vec::new()
    } else {
        body(rng, 200)
    };
    let framing = rng.below(3);
    let until_close = framing == 2 && status != 204 && !head_method;
    match framing {
        0 => {
            out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", data.len()).as_bytes());
            if !head_method {
                out.extend_from_slice(&data);
            }
        }
        1 => {
            out.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
            if !head_method && status != 204 {
                for piece in data.chunks(1 + rng.below(64)) {
                    out.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
                    out.extend_from_slice(piece);
                    out.extend_from_slice(b"\r\n");
                }
                out.extend_from_slice(b"0\r\n\r\n");
            }
        }
        _ => {
            out.extend_from_slice(b"\r\n");
            out.extend_from_slice(&data);
        }
    }
    (out, status, data, until_close)
}

/// (statuses, body, ends) or the error, from a response fed in pieces.
fn receive(
    stream: &[u8],
    cuts: &[usize],
    head_method: bool,
    streamed: bool,
) -> Result<(Vec<u16>, Vec<u8>, usize), ()> {
    let mut conn = ClientConnection::new(Limits::default());
    let mut out = Vec::new();
    let method: &[u8] = if head_method { b"HEAD" } else { b"POST" };
    conn.write_request(
        method,
        b"/mcp",
        &[(b"host", b"h")],
        None,
        streamed,
        &mut out,
    )
    .unwrap();
    let mut statuses = Vec::new();
    let mut data = Vec::new();
    let mut ends = 0;
    let mut take = |e: ClientEvent| match e {
        ClientEvent::Response(r) => {
            statuses.push(r.status());
            data.extend_from_slice(r.body());
            ends += 1;
        }
        ClientEvent::Head(r) => statuses.push(r.status()),
        ClientEvent::Data(d) => data.extend_from_slice(&d),
        ClientEvent::End => ends += 1,
    };
    let mut from = 0;
    for &to in cuts.iter().chain(std::iter::once(&stream.len())) {
        conn.feed(&stream[from..to]);
        from = to;
        while let Some(e) = conn.next_event().map_err(|_| ())? {
            take(e);
        }
    }
    conn.feed_eof();
    while let Some(e) = conn.next_event().map_err(|_| ())? {
        take(e);
    }
    Ok((statuses, data, ends))
}

#[test]
fn client_responses() {
    let iters = env_u64("JETMCP_HTTP1_FUZZ_ITERS", DEFAULT_ITERS) / 2;
    let seed = env_u64("JETMCP_HTTP1_FUZZ_SEED", DEFAULT_SEED) ^ 1;
    let mut rng = Rng(seed);
    for i in 0..iters {
        let head_method = rng.one_in(6);
        let (mut stream, status, data, _) = response(&mut rng, head_method);
        let mutated = rng.one_in(2);
        if mutated {
            mutate(&mut rng, &mut stream);
        }
        let report = format!(
            "iteration {i} of JETMCP_HTTP1_FUZZ_SEED={seed} (mutated: {mutated}, HEAD: {head_method}):\n{:?}",
            String::from_utf8_lossy(&stream)
        );
        let bytes: Vec<usize> = (1..stream.len()).collect();
        let cuts = random_cuts(&mut rng, stream.len());
        let whole = receive(&stream, &[], head_method, false);
        for streamed in [false, true] {
            assert_eq!(
                whole,
                receive(&stream, &bytes, head_method, streamed),
                "byte by byte, streamed {streamed}\n{report}"
            );
            assert_eq!(
                whole,
                receive(&stream, &cuts, head_method, streamed),
                "at {cuts:?}, streamed {streamed}\n{report}"
            );
        }
        if !mutated {
            assert_eq!(whole, Ok((vec![status], data, 1)), "{report}");
        }
    }
}
