//! A server's side of one HTTP/1.1 connection: received bytes in, complete requests out, in
//! order, each once; responses in, bytes out.
//!
//! One request is out at a time: after [`ServerConnection::feed`] (or
//! [`ServerConnection::next_request`]) hands out a request, further input is held unparsed
//! until its response is written, then `next_request` parses the next one (pipelining). A
//! framing error is final: the connection refuses with a [`Refusal`] once, then reads nothing
//! more (never a second request from the leftovers of a bad one).
//!
//! The framing rules (RFC 9112) and where they are stricter than h11:
//! * a head is parsed by `httparse` once its blank line has come; its lines, size and field
//!   count are bounded ([`Limits`]: 431); empty lines before the request line are skipped;
//! * HTTP/1.0 and HTTP/1.1 only (another `HTTP/x.y`: 505; the HTTP/2 preface: closed with no
//!   answer); the target is visible ASCII;
//! * obs-fold, whitespace before a colon, control bytes in a value: 400 (by `httparse`);
//! * HTTP/1.1 needs exactly one Host, HTTP/1.0 at most one: 400;
//! * Content-Length is 1*DIGIT, repeated only with the same value; with Transfer-Encoding: 400;
//! * Transfer-Encoding is exactly one `chunked` (any other coding: 501; `chunked` twice, or
//!   in an HTTP/1.0 request: 400);
//! * a declared length over `max_body` is refused (413) before the body is read;
//! * keep-alive: HTTP/1.1 unless `Connection: close`, HTTP/1.0 only with `keep-alive`.

use std::mem::MaybeUninit;

use super::chunked::ChunkedDecoder;
use super::fields::Fields;
use super::response::{self, BodyFraming, FieldBlock, WriteError};
use super::scan::{check_complete, Scanned, SectionScan};
use super::{list_items, trim_ows, Limits, Phase, Refusal, Version, MAX_HEADERS_CAP};

/// A complete request: its head's bytes followed by its (decoded) body, in one buffer that the
/// method, target and fields point into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    data: Vec<u8>,
    method: (u32, u32),
    target: (u32, u32),
    version: Version,
    fields: Fields,
    body_start: usize,
    keep_alive: bool,
    expects_continue: bool,
}

impl Request {
    /// The method token, as sent (methods are case-sensitive).
    pub fn method(&self) -> &[u8] {
        &self.data[self.method.0 as usize..self.method.1 as usize]
    }

    /// The request target, as sent (visible ASCII).
    pub fn target(&self) -> &[u8] {
        &self.data[self.target.0 as usize..self.target.1 as usize]
    }

    /// The HTTP version of the request line.
    pub fn version(&self) -> Version {
        self.version
    }

    /// The head's field lines (ranges into [`Request::head`]).
    pub fn fields(&self) -> &Fields {
        &self.fields
    }

    /// The raw head the fields point into.
    pub fn head(&self) -> &[u8] {
        &self.data[..self.body_start]
    }

    /// The first value of header `name` (any case).
    pub fn header(&self, name: &[u8]) -> Option<&[u8]> {
        self.fields.first(&self.data, name)
    }

    /// Every value of header `name` (any case), in order.
    pub fn header_all<'a>(&'a self, name: &'a [u8]) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.fields.all(&self.data, name)
    }

    /// Every field line as (name, value), in order.
    pub fn header_items(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.fields.iter(&self.data)
    }

    /// The body, decoded (empty when there is none).
    pub fn body(&self) -> &[u8] {
        &self.data[self.body_start..]
    }

    /// Whether the connection may stay open after the response (the request's view; the
    /// response may still close it).
    pub fn keep_alive(&self) -> bool {
        self.keep_alive
    }

    /// Whether the request carried `Expect: 100-continue`.
    pub fn expects_continue(&self) -> bool {
        self.expects_continue
    }
}

#[derive(Debug)]
enum Framing {
    Length(u64),
    Chunked(ChunkedDecoder),
}

/// What the response being written must know of its request.
#[derive(Debug, Clone, Copy)]
struct Outstanding {
    keep_alive: bool,
    head_method: bool,
    version: Version,
}

// One state per connection: boxing the large variant would cost an allocation per message.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
enum State {
    Head(SectionScan),
    Body { request: Request, framing: Framing },
    Responding(Outstanding),
    Streaming { to: Outstanding, chunked: bool },
    Closed,
}

/// A server's side of one connection (see the module docs).
#[derive(Debug)]
pub struct ServerConnection {
    limits: Limits,
    buf: Vec<u8>,
    /// Where the unparsed input starts in `buf`.
    start: usize,
    state: State,
    continue_due: bool,
}

const BAD_REQUEST: Refusal = Refusal::new(400, "malformed request head");

impl ServerConnection {
    /// A connection waiting for its first request, holding its peer to `limits`
    /// ([`Limits::normalized`]).
    pub fn new(limits: Limits) -> Self {
        ServerConnection {
            limits: limits.normalized(),
            buf: Vec::new(),
            start: 0,
            state: State::Head(SectionScan::default()),
            continue_due: false,
        }
    }

    /// The limits in force (normalized).
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Takes received bytes and returns the next complete request, if one is complete and no
    /// earlier response is still being written. A refusal is returned once; after it (and
    /// after a response that closed the connection) input is dropped and nothing is returned.
    pub fn feed(&mut self, data: &[u8]) -> Result<Option<Request>, Refusal> {
        if matches!(self.state, State::Closed) {
            return Ok(None);
        }
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
        self.buf.extend_from_slice(data);
        self.advance()
    }

    /// The next complete request from input already held (a pipelined one), once the previous
    /// response is written.
    pub fn next_request(&mut self) -> Result<Option<Request>, Refusal> {
        self.advance()
    }

    /// Where the connection is (for the caller's timeouts).
    pub fn phase(&self) -> Phase {
        match &self.state {
            State::Head(_) if self.start == self.buf.len() => Phase::Idle,
            State::Head(_) => Phase::Head,
            State::Body { .. } => Phase::Body,
            State::Responding(_) | State::Streaming { .. } => Phase::Responding,
            State::Closed => Phase::Closed,
        }
    }

    /// Bytes held: unparsed input, and the part of a request read so far.
    pub fn buffered(&self) -> usize {
        let partial = match &self.state {
            State::Body { request, .. } => request.data.len(),
            _ => 0,
        };
        self.buf.len() - self.start + partial
    }

    /// Whether the caller should stop reading until the response is written: more than
    /// `max_buffer` bytes of pipelined input are held.
    pub fn wants_pause(&self) -> bool {
        matches!(self.state, State::Responding(_) | State::Streaming { .. })
            && self.buf.len() - self.start > self.limits.max_buffer
    }

    /// True once per request that sent `Expect: 100-continue` and whose body has not all
    /// come: the caller writes [`response::CONTINUE`] then.
    pub fn take_continue(&mut self) -> bool {
        std::mem::take(&mut self.continue_due)
    }

    /// Whether the connection is closed to input (after a refusal, or after a response that
    /// closes it): the caller closes the transport once its writes are flushed.
    pub fn is_closed(&self) -> bool {
        matches!(self.state, State::Closed)
    }

    fn fail(&mut self, refusal: Refusal) -> Refusal {
        self.state = State::Closed;
        self.buf = Vec::new();
        self.start = 0;
        self.continue_due = false;
        refusal
    }

    fn advance(&mut self) -> Result<Option<Request>, Refusal> {
        loop {
            match &mut self.state {
                State::Head(scan) => {
                    let input = &self.buf[self.start..];
                    if input.is_empty() {
                        return Ok(None);
                    }
                    let parsed = if scan.started() {
                        match scan.scan(input, self.limits.max_line, self.limits.max_head, true) {
                            Err(r) => return Err(self.fail(r)),
                            Ok(Scanned::Partial) => return Ok(None),
                            Ok(Scanned::End(len)) => {
                                match parse_head(&input[..len], &self.limits) {
                                    Ok(Some(parsed)) => parsed,
                                    // The scanner found the blank line, so the head is whole.
                                    Ok(None) => return Err(self.fail(BAD_REQUEST)),
                                    Err(r) => return Err(self.fail(r)),
                                }
                            }
                        }
                    } else {
                        // Most heads arrive whole: parse first, scan only when that fails.
                        match parse_head(input, &self.limits) {
                            Ok(Some(parsed)) => {
                                let len = parsed.0.body_start;
                                let l = &self.limits;
                                if let Err(r) =
                                    check_complete(input, len, l.max_line, l.max_head, true)
                                {
                                    return Err(self.fail(r));
                                }
                                parsed
                            }
                            Ok(None) | Err(_) => {
                                match scan.scan(
                                    input,
                                    self.limits.max_line,
                                    self.limits.max_head,
                                    true,
                                ) {
                                    Err(r) => return Err(self.fail(r)),
                                    Ok(Scanned::Partial) => return Ok(None),
                                    Ok(Scanned::End(len)) => {
                                        match parse_head(&input[..len], &self.limits) {
                                            Ok(Some(parsed)) => parsed,
                                            Ok(None) => return Err(self.fail(BAD_REQUEST)),
                                            Err(r) => return Err(self.fail(r)),
                                        }
                                    }
                                }
                            }
                        }
                    };
                    let (request, framing) = parsed;
                    self.start += request.body_start;
                    let waiting = self.buf.len() - self.start;
                    self.continue_due = request.expects_continue && waiting == 0;
                    self.state = State::Body { request, framing };
                }
                State::Body { request, framing } => {
                    let input = &self.buf[self.start..];
                    let done = match framing {
                        Framing::Length(remaining) => {
                            let take = (*remaining).min(input.len() as u64) as usize;
                            request.data.extend_from_slice(&input[..take]);
                            self.start += take;
                            *remaining -= take as u64;
                            *remaining == 0
                        }
                        Framing::Chunked(decoder) => {
                            match decoder.decode(input, &mut request.data, &self.limits) {
                                Ok(used) => self.start += used,
                                Err(r) => return Err(self.fail(r)),
                            }
                            decoder.is_done()
                        }
                    };
                    if !done {
                        return Ok(None);
                    }
                    let State::Body { request, .. } =
                        std::mem::replace(&mut self.state, State::Closed)
                    else {
                        unreachable!("matched above")
                    };
                    self.continue_due = false;
                    self.state = State::Responding(Outstanding {
                        keep_alive: request.keep_alive,
                        head_method: request.method() == b"HEAD",
                        version: request.version,
                    });
                    if self.start == self.buf.len() {
                        self.buf.clear();
                        self.start = 0;
                    }
                    return Ok(Some(request));
                }
                State::Responding(_) | State::Streaming { .. } | State::Closed => return Ok(None),
            }
        }
    }

    fn outstanding(&self) -> Result<Outstanding, WriteError> {
        match self.state {
            State::Responding(to) => Ok(to),
            _ => Err(WriteError::NoRequest),
        }
    }

    /// After a response's last byte: ready for the next request, or closed.
    fn finish(&mut self, keep_alive: bool) {
        if keep_alive {
            self.state = State::Head(SectionScan::default());
            if self.start > 0 {
                self.buf.drain(..self.start);
                self.start = 0;
            }
        } else {
            self.state = State::Closed;
            self.buf = Vec::new();
            self.start = 0;
        }
    }

    /// Writes the whole response to the outstanding request into `out`: status line, the
    /// caller's fields, framing (Content-Length; none for 204 and 304), Connection when it
    /// closes (`close`, or the request asked to), and the body (none for a HEAD request).
    pub fn respond(
        &mut self,
        status: u16,
        fields: &[(&[u8], &[u8])],
        body: &[u8],
        close: bool,
        out: &mut Vec<u8>,
    ) -> Result<(), WriteError> {
        self.respond_with(
            status,
            |out| response::write_fields(out, fields),
            body,
            close,
            out,
        )
    }

    /// [`ServerConnection::respond`] with fields checked beforehand.
    pub fn respond_block(
        &mut self,
        status: u16,
        fields: &FieldBlock,
        body: &[u8],
        close: bool,
        out: &mut Vec<u8>,
    ) -> Result<(), WriteError> {
        self.respond_with(
            status,
            |out| {
                out.extend_from_slice(fields.as_bytes());
                Ok(())
            },
            body,
            close,
            out,
        )
    }

    fn respond_with(
        &mut self,
        status: u16,
        fields: impl FnOnce(&mut Vec<u8>) -> Result<(), WriteError>,
        body: &[u8],
        close: bool,
        out: &mut Vec<u8>,
    ) -> Result<(), WriteError> {
        let to = self.outstanding()?;
        if !(200..=999).contains(&status) {
            return Err(WriteError::Status(status));
        }
        let bodiless = status == 204 || status == 304;
        if bodiless && !body.is_empty() {
            return Err(WriteError::BodyNotAllowed(status));
        }
        let mark = out.len();
        out.reserve(96 + body.len());
        response::write_status_line(out, status);
        if let Err(e) = fields(out) {
            out.truncate(mark);
            return Err(e);
        }
        let keep_alive = to.keep_alive && !close;
        let framing = if bodiless {
            BodyFraming::None
        } else {
            BodyFraming::Length(body.len() as u64)
        };
        response::finish_head(out, framing, keep_alive, to.version);
        if !to.head_method {
            out.extend_from_slice(body);
        }
        self.finish(keep_alive);
        Ok(())
    }

    /// Writes the head of a streamed response (an SSE stream): chunked for an HTTP/1.1
    /// request, close-delimited for an HTTP/1.0 one (which then closes the connection).
    pub fn start_stream(
        &mut self,
        status: u16,
        fields: &[(&[u8], &[u8])],
        close: bool,
        out: &mut Vec<u8>,
    ) -> Result<(), WriteError> {
        self.start_stream_with(
            status,
            |out| response::write_fields(out, fields),
            close,
            out,
        )
    }

    /// [`ServerConnection::start_stream`] with fields checked beforehand.
    pub fn start_stream_block(
        &mut self,
        status: u16,
        fields: &FieldBlock,
        close: bool,
        out: &mut Vec<u8>,
    ) -> Result<(), WriteError> {
        self.start_stream_with(
            status,
            |out| {
                out.extend_from_slice(fields.as_bytes());
                Ok(())
            },
            close,
            out,
        )
    }

    fn start_stream_with(
        &mut self,
        status: u16,
        fields: impl FnOnce(&mut Vec<u8>) -> Result<(), WriteError>,
        close: bool,
        out: &mut Vec<u8>,
    ) -> Result<(), WriteError> {
        let mut to = self.outstanding()?;
        if !(200..=999).contains(&status) || status == 204 || status == 304 {
            return Err(WriteError::Status(status));
        }
        let mark = out.len();
        response::write_status_line(out, status);
        if let Err(e) = fields(out) {
            out.truncate(mark);
            return Err(e);
        }
        let chunked = to.version == Version::Http11;
        to.keep_alive = to.keep_alive && !close && chunked;
        let framing = if to.head_method {
            BodyFraming::None
        } else if chunked {
            BodyFraming::Chunked
        } else {
            BodyFraming::UntilClose
        };
        response::finish_head(out, framing, to.keep_alive, to.version);
        self.state = State::Streaming { to, chunked };
        Ok(())
    }

    /// Writes data of the streamed response (nothing for a HEAD request).
    pub fn stream_data(&mut self, data: &[u8], out: &mut Vec<u8>) -> Result<(), WriteError> {
        match self.state {
            State::Streaming { to, chunked } => {
                if !to.head_method {
                    if chunked {
                        response::write_chunk(out, data);
                    } else {
                        out.extend_from_slice(data);
                    }
                }
                Ok(())
            }
            _ => Err(WriteError::NoStream),
        }
    }

    /// Ends the streamed response. Afterwards the connection reads the next request, or is
    /// closed (an HTTP/1.0 stream, or one started with `close`).
    pub fn end_stream(&mut self, out: &mut Vec<u8>) -> Result<(), WriteError> {
        match self.state {
            State::Streaming { to, chunked } => {
                if chunked && !to.head_method {
                    out.extend_from_slice(response::LAST_CHUNK);
                }
                self.finish(to.keep_alive);
                Ok(())
            }
            _ => Err(WriteError::NoStream),
        }
    }
}

/// The refusal for an `httparse` error on a whole head.
fn head_refusal(error: httparse::Error, head: &[u8]) -> Refusal {
    match error {
        httparse::Error::TooManyHeaders => super::scan::TOO_LARGE,
        httparse::Error::Version => {
            let start = head
                .iter()
                .position(|&b| b != b'\r' && b != b'\n')
                .unwrap_or(0);
            let head = &head[start..];
            if head.starts_with(b"PRI * HTTP/2.0\r\n") {
                return Refusal {
                    status: None,
                    reason: "HTTP/2 connection preface",
                };
            }
            let line = head.split(|&b| b == b'\n').next().unwrap_or(b"");
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            // 505 only for a well-formed request line naming another version.
            let mut parts = line.split(|&b| b == b' ');
            let version = match (parts.next(), parts.next(), parts.next(), parts.next()) {
                (Some(_), Some(_), Some(version), None) => Some(version),
                _ => None,
            };
            match version {
                Some([b'H', b'T', b'T', b'P', b'/', major, b'.', minor])
                    if major.is_ascii_digit() && minor.is_ascii_digit() =>
                {
                    Refusal::new(505, "HTTP version not supported")
                }
                _ => BAD_REQUEST,
            }
        }
        _ => BAD_REQUEST,
    }
}

/// Parses a request head at the start of `input`. Ok(None): the head is not complete.
/// Checks the head's framing fields and returns the request (its head copied, its body to
/// come) and how its body is framed.
fn parse_head(input: &[u8], limits: &Limits) -> Result<Option<(Request, Framing)>, Refusal> {
    let mut storage = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS_CAP];
    let mut head = httparse::Request::new(&mut []);
    let len = match head.parse_with_uninit_headers(input, &mut storage[..limits.max_headers]) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(head_refusal(e, input)),
    };
    let base = input.as_ptr() as usize;
    let range = |s: &[u8]| {
        let start = s.as_ptr() as usize - base;
        (start as u32, (start + s.len()) as u32)
    };
    let method = head.method.unwrap_or_default().as_bytes();
    let target = head.path.unwrap_or_default().as_bytes();
    if !target.iter().all(|&b| (b'!'..=b'~').contains(&b)) {
        return Err(Refusal::new(400, "request target is not visible ASCII"));
    }
    let version = if head.version == Some(1) {
        Version::Http11
    } else {
        Version::Http10
    };

    let mut fields = Fields::with_capacity(head.headers.len());
    let mut hosts = 0usize;
    let mut length: Option<u64> = None;
    let mut bad_length = false;
    let mut codings = 0usize;
    let mut chunked = 0usize;
    let mut unknown_coding = false;
    let mut close = false;
    let mut keep_alive_token = false;
    let mut expect_continue = false;
    for field in head.headers.iter() {
        let name = field.name.as_bytes();
        let value = field.value;
        fields.push(input, name, value);
        match name.len() {
            4 if name.eq_ignore_ascii_case(b"host") => hosts += 1,
            6 if name.eq_ignore_ascii_case(b"expect") => {
                expect_continue |= trim_ows(value).eq_ignore_ascii_case(b"100-continue");
            }
            10 if name.eq_ignore_ascii_case(b"connection") => {
                for token in list_items(value) {
                    close |= token.eq_ignore_ascii_case(b"close");
                    keep_alive_token |= token.eq_ignore_ascii_case(b"keep-alive");
                }
            }
            14 if name.eq_ignore_ascii_case(b"content-length") => {
                for item in value.split(|&b| b == b',').map(trim_ows) {
                    match content_length(item) {
                        Some(n) if length.is_none_or(|seen| seen == n) => length = Some(n),
                        _ => bad_length = true,
                    }
                }
            }
            17 if name.eq_ignore_ascii_case(b"transfer-encoding") => {
                let mut any = false;
                for coding in list_items(value) {
                    any = true;
                    codings += 1;
                    if coding.eq_ignore_ascii_case(b"chunked") {
                        chunked += 1;
                    } else {
                        unknown_coding = true;
                    }
                }
                if !any {
                    codings += 1;
                    unknown_coding = true;
                }
            }
            _ => {}
        }
    }

    if hosts > 1 {
        return Err(Refusal::new(400, "more than one Host header"));
    }
    if hosts == 0 && version == Version::Http11 {
        return Err(Refusal::new(400, "missing Host header"));
    }
    if bad_length {
        return Err(Refusal::new(400, "invalid Content-Length"));
    }
    let framing = if codings > 0 {
        if length.is_some() {
            return Err(Refusal::new(
                400,
                "both Content-Length and Transfer-Encoding",
            ));
        }
        if version == Version::Http10 {
            return Err(Refusal::new(
                400,
                "Transfer-Encoding in an HTTP/1.0 request",
            ));
        }
        if unknown_coding {
            return Err(Refusal::new(501, "unsupported transfer coding"));
        }
        if chunked != 1 || codings != 1 {
            return Err(Refusal::new(400, "chunked applied more than once"));
        }
        Framing::Chunked(ChunkedDecoder::default())
    } else {
        let n = length.unwrap_or(0);
        if n > limits.max_body {
            return Err(Refusal::new(413, "body too large"));
        }
        Framing::Length(n)
    };
    let has_body = !matches!(framing, Framing::Length(0));
    let keep_alive = match version {
        Version::Http11 => !close,
        Version::Http10 => keep_alive_token && !close,
    };
    // What of the body is already here is copied with the head, so reserve for it.
    let expected = match framing {
        Framing::Length(n) => (n as usize).min(input.len() - len),
        Framing::Chunked(_) => input.len() - len,
    };
    let mut data = Vec::with_capacity(len + expected);
    data.extend_from_slice(&input[..len]);
    Ok(Some((
        Request {
            data,
            method: range(method),
            target: range(target),
            version,
            fields,
            body_start: len,
            keep_alive,
            expects_continue: expect_continue && version == Version::Http11 && has_body,
        },
        framing,
    )))
}

/// A Content-Length value: 1*DIGIT (no sign, space or hex), saturating at u64::MAX (which is
/// over any body limit, so a huge length is refused as too large, not as malformed).
fn content_length(value: &[u8]) -> Option<u64> {
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(value.iter().fold(0u64, |n, &d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    }))
}
